import { MinioObjectStore } from '../src/adapters/minio/minio-object-store';

describe('an S3_ENDPOINT with credentials in it', () => {
  it('is named without its password or query values when S3 is unreachable', async () => {
    // Port 1: nothing listens, the connection is refused at once.
    const store = new MinioObjectStore({ endpoint: 'http://user:PASS-in-url@127.0.0.1:1/?X-Amz-Signature=SIG-in-url', accessKey: 'a', secretKey: 'b', bucket: 'files' });
    const failure = (await store.ready(2000).catch((err: unknown) => err)) as Error;
    expect(failure.message).toMatch(/^S3 at http:\/\/user:\*\*\*@127\.0\.0\.1:1\/\?X-Amz-Signature=\*\*\* is unreachable \(S3_ENDPOINT\)/);
    expect(failure.message).not.toMatch(/PASS-in-url|SIG-in-url/);
  });
});
