import type { ClientError, Metadata } from 'nice-grpc-common';

/**
 * Trailer a service sets on a status its own code chose (a DomainError, see errorMiddleware). grpc-js ends calls with
 * statuses of its own too, RESOURCE_EXHAUSTED above all: a message over the size limit, refused by the sender's or the
 * receiver's side ("Sent message larger than max", "Received message larger than max", ...). Those carry no trailer of
 * ours, so a caller can tell a service's quota or limit (the client's doing) from a transport limit (not the client's).
 */
export const STATUS_ORIGIN_TRAILER = 'x-status-origin';
const SERVICE = 'service';

const raisedByServices = new WeakSet<ClientError>();

/** Marks the trailer of a status the service's own code chose. */
export function markStatusOfService(trailer: Metadata): void {
  trailer.set(STATUS_ORIGIN_TRAILER, SERVICE);
}

/** Trailer naming a DomainError's `reason`, for a caller that must tell it apart from other errors of its status. */
export const STATUS_REASON_TRAILER = 'x-status-reason';
const reasons = new WeakMap<ClientError, string>();

export function markStatusReason(trailer: Metadata, reason: string): void {
  trailer.set(STATUS_REASON_TRAILER, reason);
}

export function trailerStatusReason(trailer: Metadata): string | undefined {
  return trailer.get(STATUS_REASON_TRAILER);
}

export function recordStatusReason(error: ClientError, reason: string): void {
  reasons.set(error, reason);
}

/** The `reason` of the DomainError the called service ended the call with; undefined for none (see isStatusOfService). */
export function statusReasonOf(error: ClientError): string | undefined {
  return reasons.get(error);
}

/** Whether a call's trailer says its status came from the service's own code. */
export function trailerSaysStatusOfService(trailer: Metadata): boolean {
  return trailer.get(STATUS_ORIGIN_TRAILER) === SERVICE;
}

/** Records that the call this error ended came back with a status the service's own code chose. */
export function recordStatusOfService(error: ClientError): void {
  raisedByServices.add(error);
}

/**
 * Whether the status of a failed call was chosen by the called service's own code, rather than by gRPC itself (a
 * message over the size limit, a connection refused or reset, a deadline, a cancellation). Only errors of clients made
 * by createGrpcClient are ever recorded.
 */
export function isStatusOfService(error: ClientError): boolean {
  return raisedByServices.has(error);
}
