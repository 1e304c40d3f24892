// A DNS server on loopback (UDP, port 0) standing in for users' DNS hosts: it answers TXT questions for
// the names a test gives it, NXDOMAIN for any other name, and SERVFAIL for names told to fail. Packets are
// encoded and decoded with dns-packet, so the server under test talks to it with its real resolver
// (node:dns through edge.dnsServers).
import { createSocket, type RemoteInfo } from 'node:dgram';
import { once } from 'node:events';
import { AUTHORITATIVE_ANSWER, decode, encode, RECURSION_AVAILABLE, RECURSION_DESIRED, type Answer, type Packet } from 'dns-packet';

const NXDOMAIN = 3;
const SERVFAIL = 2;

export interface DnsFixture {
  /** `127.0.0.1:<port>`, as edge.dnsServers takes it. */
  server: string;
  /** Serves these TXT records (one string each) at `name`, replacing what it served there. */
  setTxt(name: string, values: readonly string[]): void;
  /** Answers SERVFAIL for `name`. */
  fail(name: string): void;
  /** NXDOMAIN for `name` again. */
  remove(name: string): void;
  /** Questions received, by name (lower-case). */
  asked(name: string): number;
  close(): Promise<void>;
}

type Entry = { txt: readonly string[] } | 'servfail';

export async function startDnsFixture(): Promise<DnsFixture> {
  const socket = createSocket('udp4');
  const names = new Map<string, Entry>();
  const questions = new Map<string, number>();

  socket.on('message', (msg: Buffer, peer: RemoteInfo) => {
    let query: Packet;
    try {
      query = decode(msg);
    } catch {
      return; // not DNS: no answer
    }
    const question = query.questions?.[0];
    if (!question) return;
    const name = question.name.toLowerCase();
    questions.set(name, (questions.get(name) ?? 0) + 1);
    const entry = names.get(name);
    let rcode = 0;
    const answers: Answer[] = [];
    if (entry === undefined) rcode = NXDOMAIN;
    else if (entry === 'servfail') rcode = SERVFAIL;
    else if (question.type === 'TXT') for (const value of entry.txt) answers.push({ type: 'TXT', name: question.name, ttl: 1, class: 'IN', data: [value] });
    const response = encode({
      id: query.id ?? 0,
      type: 'response',
      // Recursion desired is echoed and available granted: the resolver takes the answer as final.
      flags: AUTHORITATIVE_ANSWER | RECURSION_DESIRED | RECURSION_AVAILABLE | rcode,
      questions: [question],
      answers,
    });
    socket.send(response, peer.port, peer.address);
  });

  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  const { port } = socket.address();

  return {
    server: `127.0.0.1:${port}`,
    setTxt: (name, values) => names.set(name.toLowerCase(), { txt: [...values] }),
    fail: (name) => names.set(name.toLowerCase(), 'servfail'),
    remove: (name) => names.delete(name.toLowerCase()),
    asked: (name) => questions.get(name.toLowerCase()) ?? 0,
    close: async () => {
      socket.close();
      await once(socket, 'close');
    },
  };
}
