/** Thrown by route code for an answer that is not 2xx; the error handler writes {"message"}. */
export class HttpError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
    this.name = 'HttpError';
  }
}

export const badRequest = (message: string) => new HttpError(400, message);
export const unauthorized = (message = 'You must be logged in') => new HttpError(401, message);
export const notFound = (message = 'Not found') => new HttpError(404, message);
