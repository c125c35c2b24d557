/** The largest gRPC message every service and client here sends or accepts (grpc-js defaults to 4 MiB receive). */
export const GRPC_MAX_MESSAGE_BYTES = 8 * 1024 * 1024;

/**
 * Where one part of a list answered in parts ends: half a message, so ids, times and framing the byte estimate leaves
 * out still fit. Callers ask for it and the cards service assumes it when an older caller does not say.
 */
export const GRPC_PART_BYTES = GRPC_MAX_MESSAGE_BYTES / 2;
