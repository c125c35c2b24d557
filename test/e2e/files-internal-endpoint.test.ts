import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { signUp, type TestUser } from '../support/accounts';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';

// The files service's download endpoint listens on loopback in the all-in-one; the gateway proxies to it after checking
// the caller. Another local process (another user of the host, a sidecar) that finds the port must not read a private
// file by naming its owner in x-caller-id, as the endpoint trusts the gateway for that.
const docx = readFileSync(join(__dirname, '../fixtures/documents/energy.docx')).toString('base64url');
const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const onLinux = existsSync('/proc/self/fd') && existsSync('/proc/net/tcp');
if (!onLinux) process.stdout.write('[files-internal-endpoint] skipped: needs /proc to find the ports a process listens on\n');

/** TCP ports the process listens on at 127.0.0.1 (its socket inodes matched against /proc/net/tcp's LISTEN rows). */
function loopbackListeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      if (inode) inodes.add(inode);
    } catch {
      // closed meanwhile
    }
  }
  const ports: number[] = [];
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const cols = line.trim().split(/\s+/);
    // local_address is hex "0100007F:PORT"; state 0A is LISTEN; column 9 is the inode.
    if (cols.length < 10 || cols[3] !== '0A' || !inodes.has(cols[9]!)) continue;
    const [address, port] = cols[1]!.split(':');
    if (address === '0100007F') ports.push(parseInt(port!, 16));
  }
  return ports;
}

(onLinux ? describe : describe.skip)("the files service's internal download endpoint", () => {
  let system: RunningSystem;
  const mailbox = new Mailbox();
  let alice: TestUser;

  beforeAll(async () => {
    await mailbox.start();
    // FILES_INTERNAL_TOKEN unset, as the README's command starts it.
    system = await startSystem({ env: { SMTP_URL: mailbox.url, FILES_INTERNAL_TOKEN: '' } });
    alice = await signUp(system.baseUrl, mailbox, 'alice');
  }, 120_000);
  afterAll(async () => {
    await system?.stop();
    await mailbox.stop();
  });

  it('does not hand a private file to a local process that names its owner; the owner still downloads it through the gateway', async () => {
    const upload = await alice.client.post('/api/file', { base64_docx_file: docx, file_name: 'private.docx', file_mime_type: DOCX, private: true });
    expect(upload.status).toBe(200);
    const fileId = upload.json.id as string;
    const ports = loopbackListeningPorts(system.process.pid!).filter((p) => p !== Number(new URL(system.baseUrl).port));
    expect(ports.length).toBeGreaterThan(0);
    const answers: Array<{ port: number; status: number | string }> = [];
    for (const port of ports) {
      const status = await fetch(`http://127.0.0.1:${port}/files/${fileId}`, { headers: { 'x-caller-id': alice.id }, signal: AbortSignal.timeout(2_000) })
        .then((res) => res.status)
        .catch((err: unknown) => `no HTTP answer (${(err as Error).name})`);
      answers.push({ port, status });
    }
    // The endpoint is among the ports (it answers HTTP), and refuses without the gateway's token.
    expect(answers.some((a) => a.status === 401)).toBe(true);
    expect(answers.filter((a) => a.status === 200)).toEqual([]);
    const download = await alice.client.get(`/api/file/${fileId}/download`);
    expect(download.status).toBe(200);
  });
});
