/** A started service, as its main.ts or the all-in-one launcher holds it. */
export interface RunningService {
  name: string;
  /** host:port of its gRPC server (or HTTP for the gateway). */
  address: string;
  stop(): Promise<void>;
}

/** Formats a Date as the interface's timestamp: ISO 8601 with fractional seconds and no zone offset. */
export function toApiTimestamp(date: Date | undefined): string | null {
  return date ? date.toISOString().replace('Z', '') : null;
}
