import { Status } from 'nice-grpc-common';

/** gRPC status -> HTTP status, after grpc-gateway's runtime/errors.go table. */
export function httpStatusFromGrpc(status: Status): number {
  switch (status) {
    case Status.OK:
      return 200;
    case Status.INVALID_ARGUMENT:
    case Status.FAILED_PRECONDITION:
    case Status.OUT_OF_RANGE:
      return 400;
    case Status.UNAUTHENTICATED:
      return 401;
    case Status.PERMISSION_DENIED:
      return 403;
    case Status.NOT_FOUND:
      return 404;
    case Status.ALREADY_EXISTS:
    case Status.ABORTED:
      return 409;
    case Status.RESOURCE_EXHAUSTED:
      return 429;
    case Status.CANCELLED:
      return 499;
    case Status.UNAVAILABLE:
      return 503;
    case Status.DEADLINE_EXCEEDED:
      return 504;
    default:
      return 500;
  }
}
