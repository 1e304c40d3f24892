// A DNS server on loopback (UDP, port 0) standing in for users' DNS hosts: it answers TXT and A questions
// for the names a test gives it, NXDOMAIN for any other name, and SERVFAIL for names told to fail. A name
// it knows answers any other type (AAAA, CAA, ...) with an empty NOERROR answer, as a real zone does
// (NODATA), never NXDOMAIN. Packets are encoded and decoded with dns-packet, so the server under test
// talks to it with its real resolver (node:dns through edge.dnsServers), and pebble's VA with its own
// (`pebble -dnsserver`, test/helpers/pebble.ts: it asks AAAA, then A, for each name it validates).
import { createSocket, type RemoteInfo } from 'node:dgram';
import { once } from 'node:events';
import { isIPv4 } from 'node:net';
import { AUTHORITATIVE_ANSWER, decode, encode, RECURSION_AVAILABLE, RECURSION_DESIRED, type Answer, type Packet } from 'dns-packet';

const NXDOMAIN = 3;
const SERVFAIL = 2;

export interface DnsFixture {
  /** `127.0.0.1:<port>`, as edge.dnsServers and `pebble -dnsserver` take it. */
  server: string;
  /** Serves these TXT records (one string each) at `name`, replacing the TXT records it served there. */
  setTxt(name: string, values: readonly string[]): void;
  /** Serves these A records at `name` (e.g. '127.0.0.1'), replacing the A records it served there. */
  setA(name: string, address: string | readonly string[]): void;
  /** Answers SERVFAIL for `name` (whatever it served there is forgotten). */
  fail(name: string): void;
  /** NXDOMAIN for `name` again. */
  remove(name: string): void;
  /** Questions received for `name` (lower-case, no trailing dot), of any type or of `type` ('A', 'AAAA', 'TXT', ...). */
  asked(name: string, type?: string): number;
  close(): Promise<void>;
}

interface Records {
  txt: readonly string[];
  a: readonly string[];
}
type Entry = Records | 'servfail';

export async function startDnsFixture(): Promise<DnsFixture> {
  const socket = createSocket('udp4');
  const names = new Map<string, Entry>();
  /** name -> type -> count */
  const questions = new Map<string, Map<string, number>>();

  socket.on('message', (msg: Buffer, peer: RemoteInfo) => {
    let query: Packet;
    try {
      query = decode(msg);
    } catch {
      return; // not DNS: no answer
    }
    const question = query.questions?.[0];
    if (!question) return;
    const name = question.name.toLowerCase().replace(/\.$/, '');
    const byType = questions.get(name) ?? new Map<string, number>();
    questions.set(name, byType);
    byType.set(question.type, (byType.get(question.type) ?? 0) + 1);
    const entry = names.get(name);
    let rcode = 0;
    const answers: Answer[] = [];
    if (entry === undefined) rcode = NXDOMAIN;
    else if (entry === 'servfail') rcode = SERVFAIL;
    else if (question.type === 'TXT') for (const value of entry.txt) answers.push({ type: 'TXT', name: question.name, ttl: 1, class: 'IN', data: [value] });
    else if (question.type === 'A') for (const address of entry.a) answers.push({ type: 'A', name: question.name, ttl: 1, class: 'IN', data: address });
    // Any other type of a known name: NOERROR with no answers (NODATA).
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

  const key = (name: string): string => name.toLowerCase().replace(/\.$/, '');
  const records = (name: string): Records => {
    const entry = names.get(key(name));
    return entry === undefined || entry === 'servfail' ? { txt: [], a: [] } : entry;
  };
  return {
    server: `127.0.0.1:${port}`,
    setTxt: (name, values) => names.set(key(name), { ...records(name), txt: [...values] }),
    setA: (name, address) => {
      const a = typeof address === 'string' ? [address] : [...address];
      for (const ip of a) if (!isIPv4(ip)) throw new Error(`setA(${name}): not an IPv4 address: ${ip}`);
      names.set(key(name), { ...records(name), a });
    },
    fail: (name) => names.set(key(name), 'servfail'),
    remove: (name) => names.delete(key(name)),
    asked: (name, type) => {
      const byType = questions.get(key(name));
      if (byType === undefined) return 0;
      if (type !== undefined) return byType.get(type.toUpperCase()) ?? 0;
      let total = 0;
      for (const n of byType.values()) total += n;
      return total;
    },
    close: async () => {
      socket.close();
      await once(socket, 'close');
    },
  };
}
