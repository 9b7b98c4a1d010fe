// GroupRegistry on its own: fake sessions that record what is pushed to them,
// a fake relay context, no sockets. What the relay promises about groups
// (ids, tokens, fan-out, ACK aggregation, leaving, timeouts, lagging members)
// is checked here message by message.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CloseCode, MsgType, decode, encode, frameOfBody } from '../core/protocol.js';
import { GroupRegistry } from './groups.js';
import { checkLagging, markLagging } from './slow-consumers.js';
import { RELAY_DEFAULTS } from './index.js';
import { RelayStats } from './stats.js';
import { TokenBucket } from './session.js';

/** @typedef {import('./session.js').Session} Session */
/** @typedef {import('./session.js').PendingUpdate} PendingUpdate */

/** Every RelayStats starts a CPU sampler: stop them when done. @type {RelayStats[]} */
const allStats = [];
after(() => { for (const s of allStats) s.stop(); });

/**
 * What the registry reads and writes of a Session, recording every push.
 */
class FakeSession {
  /** @param {{ udp?: boolean, batched?: boolean, membershipOnly?: boolean, name?: string }} [o] */
  constructor(o = {}) {
    /** A member connected here (relay/member.js). */
    this.local = true;
    this.node = null;
    this.id = 0;
    this.name = o.name ?? 'fake';
    /** @type {import('./groups.js').Group | null} */
    this.group = null;
    this.ready = false;
    this.udp = o.udp ?? false;
    this.batched = o.batched ?? true;
    this.membershipOnly = o.membershipOnly ?? false;
    this.lagging = false;
    this.closed = false;
    /** @type {Uint8Array[]} */
    this.replayCopies = [];
    /** @type {Map<number, PendingUpdate>} */
    this.pending = new Map();
    /** Queued UPDATEs not yet handed to a socket (takeQueuedEntries gives them up). @type {PendingUpdate[]} */
    this.queuedEntries = [];
    /** What the WebSocket queue holds (backlog() counts it). @type {{ queue: unknown[] }} */
    this.out = { queue: [] };
    /** @type {{ queue: unknown[] } | null} */
    this.dataOut = null;
    /** Everything pushed, decoded. @type {(import('../core/protocol.js').Message & { entry: PendingUpdate | null })[]} */
    this.pushed = [];
    /** Like an outbox that writes at once: the forward time is stamped on push. */
    this.stampOnPush = true;
    /** Its share of the group's fan-out (GroupRegistry.update sets rate and burst), full at the start as a Session's. */
    this.share = new TokenBucket(1e9, 1e9);
  }

  /** @param {Uint8Array} body @param {PendingUpdate | null} [entry] */
  push(body, entry = null) {
    const m = decode(frameOfBody(body));
    if (m instanceof Error) throw m;
    this.pushed.push({ ...m, entry });
    if (entry && this.stampOnPush && entry.dest.has(asSession(this))) entry.dest.set(asSession(this), performance.now());
  }

  /** As a Session's: the clock starts when the bytes are written. @param {number} _createdAt */
  rtsClockAt(_createdAt) { return NaN; }

  /** As a Session's: what it was handed while lagging, for a resume. @param {Uint8Array} body */
  keepForReplay(body) { this.replayCopies.push(body.slice()); }

  takeQueuedEntries() {
    const entries = this.queuedEntries;
    this.queuedEntries = [];
    return entries;
  }

  /** @param {number} type */
  ofType(type) { return this.pushed.filter((m) => m.type === type); }
}

/**
 * The registry only touches the fields FakeSession has; the cast says so.
 * @param {FakeSession} f
 * @returns {Session}
 */
function asSession(f) { return /** @type {Session} */ (/** @type {unknown} */ (f)); }

/** A registry on a fake relay context. */
function setup() {
  const stats = new RelayStats();
  allStats.push(stats);
  /** @type {{ session: Session, code: number, reason: string }[]} */
  const closed = [];
  /** @type {import('./index.js').RelayContext} */
  const ctx = {
    options: { ...RELAY_DEFAULTS },
    stats,
    scheduleFlush: () => {},
    markBlocked: () => {},
    closeSession: (session, code, reason) => { closed.push({ session, code, reason }); },
    dropDestination: (entry, dest) => groups.dropDestination(entry, dest),
  };
  const groups = new GroupRegistry(ctx);
  /**
   * A fake session that joined `name` (asserting it could).
   * @param {string} [group] @param {ConstructorParameters<typeof FakeSession>[0] & { token?: string, id?: number }} [o]
   */
  const joined = (group = 'g', o = {}) => {
    const f = new FakeSession(o);
    assert.equal(groups.join(asSession(f), group, o.id ?? 0, o.token ?? ''), null);
    return f;
  };
  return { stats, groups, ctx, closed, joined };
}

let seqs = 0;
/**
 * An UPDATE of this sender as the relay decodes it (with its body).
 * @param {FakeSession} sender
 * @param {number} [seq]
 */
function update(sender, seq = ++seqs) {
  const m = decode(encode({ type: MsgType.UPDATE, sender: sender.id, seq, sendTime: 1, pose: [0, 0, 0, 0, 0, 0, 1], object: null }));
  assert.ok(!(m instanceof Error) && m.type === MsgType.UPDATE);
  return /** @type {import('../core/protocol.js').UpdateMsg & { body: Uint8Array }} */ (m);
}

/**
 * The ACK `acker` sends for `sender`'s update `seq`.
 * @param {FakeSession} acker @param {FakeSession} sender @param {number} seq
 */
function ack(acker, sender, seq) {
  const m = decode(encode({ type: MsgType.ACK, sender: sender.id, seq, acker: acker.id }));
  assert.ok(!(m instanceof Error) && m.type === MsgType.ACK);
  return /** @type {import('../core/protocol.js').AckMsg & { body: Uint8Array }} */ (m);
}

describe('GroupRegistry.join', () => {
  test('assigns unique non-zero ids and WELCOMEs with the members so far', () => {
    const { groups, joined } = setup();
    const members = [joined(), joined(), joined()];
    const ids = members.map((m) => m.id);
    assert.ok(ids.every((id) => id > 0));
    assert.equal(new Set(ids).size, 3);
    const welcome = members[2].ofType(MsgType.WELCOME);
    assert.equal(welcome.length, 1);
    assert.ok(welcome[0].type === MsgType.WELCOME);
    assert.equal(welcome[0].clientId, ids[2]);
    assert.deepEqual(welcome[0].members.map((m) => m.id).sort(), [...ids].sort());
    // Earlier members heard of the later ones, once each.
    assert.deepEqual(members[0].ofType(MsgType.MEMBER_JOINED).map((m) => m.type === MsgType.MEMBER_JOINED && m.id), [ids[1], ids[2]]);
    assert.equal(groups.memberCount, 3);
    assert.equal(groups.localGroupCount, 1);
  });

  test('a requested id is given if free; taken -> 4007', () => {
    const { groups, joined } = setup();
    const a = joined('g', { id: 77 });
    assert.equal(a.id, 77);
    const b = new FakeSession();
    const err = groups.join(asSession(b), 'g', 77, '');
    assert.equal(err?.[0], CloseCode.ID_TAKEN);
    assert.equal(b.group, null);
    assert.equal(groups.memberCount, 1);
    // In another group the same id is free.
    assert.equal(joined('h', { id: 77 }).id, 77);
  });

  test('the first member sets the token; a wrong or missing one -> 4006', () => {
    const { groups, joined } = setup();
    joined('secret', { token: 'open sesame' });
    for (const token of ['wrong', '']) {
      const f = new FakeSession();
      assert.equal(groups.join(asSession(f), 'secret', 0, token)?.[0], CloseCode.FORBIDDEN);
      assert.equal(f.group, null);
    }
    joined('secret', { token: 'open sesame' });
    assert.equal(groups.memberCount, 2);
    // An open group (first member without token) takes anyone.
    joined('open');
    joined('open', { token: 'anything' });
  });

  test('the token lasts as long as the group: once empty, the next first member sets it', () => {
    const { groups, joined } = setup();
    const first = joined('g', { token: 'a' });
    groups.leave(asSession(first));
    assert.equal(groups.groups.size, 0);
    joined('g', { token: 'b' });
  });

  test('one group whatever the transport: a relayed member\'s update reaches a p2p member, whose ACK goes straight back', () => {
    const { groups, joined } = setup();
    const p = joined('g', { membershipOnly: true });
    const r = joined('g');
    assert.deepEqual([...groups.groups.keys()], ['g:g']);
    assert.equal(p.ofType(MsgType.MEMBER_JOINED).length, 1, 'the p2p member hears of the relayed one');
    groups.update(asSession(r), update(r, 1));
    assert.equal(p.ofType(MsgType.UPDATE).length, 1, 'and gets its updates');
    // the other way round: a p2p member's update reached r through LINK; r's ACK goes to the p2p sender
    groups.ack(asSession(r), ack(r, p, 1));
    assert.equal(p.ofType(MsgType.ACK).length, 1);
  });

  test('a relay-udp session is announced only once its channel opens', () => {
    const { groups, joined } = setup();
    const a = joined();
    const u = joined('g', { udp: true });
    assert.equal(u.ready, false);
    assert.equal(a.ofType(MsgType.MEMBER_JOINED).length, 0);
    groups.announce(asSession(u));
    assert.equal(u.ready, true);
    assert.equal(a.ofType(MsgType.MEMBER_JOINED).length, 1);
    groups.announce(asSession(u)); // twice: still once
    assert.equal(a.ofType(MsgType.MEMBER_JOINED).length, 1);
  });
});

describe('GroupRegistry.update: fan-out', () => {
  test('every ready member but the sender gets the body once; not-ready members none', () => {
    const { groups, stats, joined } = setup();
    const [s, a, b] = [joined(), joined(), joined()];
    const u = joined('g', { udp: true }); // no data channel yet: not ready
    const m = update(s);
    groups.update(asSession(s), m);
    assert.equal(stats.updatesIn, 1);
    for (const dest of [a, b]) {
      const got = dest.ofType(MsgType.UPDATE);
      assert.equal(got.length, 1);
      assert.deepEqual(got[0].entry?.seq, m.seq);
    }
    assert.equal(s.ofType(MsgType.UPDATE).length, 0);
    assert.equal(u.ofType(MsgType.UPDATE).length, 0);
    const entry = s.pending.get(m.seq);
    assert.ok(entry);
    assert.deepEqual([...entry.dest.keys()], [asSession(a), asSession(b)]);
  });

  test('alone in the group: ACKED_ALL at once, nothing pending', () => {
    const { groups, joined } = setup();
    const s = joined();
    groups.update(asSession(s), update(s, 5));
    assert.equal(s.pending.size, 0);
    const all = s.ofType(MsgType.ACKED_ALL);
    assert.equal(all.length, 1);
    assert.ok(all[0].type === MsgType.ACKED_ALL);
    assert.deepEqual([all[0].seq, all[0].acked, all[0].dropped], [5, 0, 0]);
  });

  test('other groups hear nothing', () => {
    const { groups, joined } = setup();
    const s = joined('g');
    const other = joined('h');
    groups.update(asSession(s), update(s));
    assert.equal(other.ofType(MsgType.UPDATE).length, 0);
  });
});

describe('GroupRegistry.ack', () => {
  test('relay: one ACKED_ALL, only after the last ACK', () => {
    const { groups, stats, joined } = setup();
    const [s, a, b] = [joined(), joined(), joined()];
    groups.update(asSession(s), update(s, 9));
    groups.ack(asSession(a), ack(a, s, 9));
    assert.equal(s.ofType(MsgType.ACKED_ALL).length, 0);
    assert.equal(s.pending.size, 1);
    groups.ack(asSession(b), ack(b, s, 9));
    const all = s.ofType(MsgType.ACKED_ALL);
    assert.equal(all.length, 1);
    assert.ok(all[0].type === MsgType.ACKED_ALL);
    assert.deepEqual([all[0].sender, all[0].seq, all[0].acked, all[0].dropped], [s.id, 9, 2, 0]);
    assert.equal(s.ofType(MsgType.ACK).length, 0, 'mode relay aggregates: no single ACK');
    assert.equal(s.pending.size, 0);
    assert.equal(stats.ackedAllSent, 1);
    assert.equal(stats.acksIn, 2);
    assert.equal(stats.rtsCount, 2);
  });

  test('relay-faithful: every ACK forwarded, no ACKED_ALL', () => {
    const { groups, stats, joined } = setup();
    const s = joined('g', { batched: false });
    const [a, b] = [joined(), joined()];
    groups.update(asSession(s), update(s, 3));
    groups.ack(asSession(a), ack(a, s, 3));
    groups.ack(asSession(b), ack(b, s, 3));
    const acks = s.ofType(MsgType.ACK);
    assert.deepEqual(acks.map((m) => m.type === MsgType.ACK && m.acker), [a.id, b.id]);
    assert.equal(s.ofType(MsgType.ACKED_ALL).length, 0);
    assert.equal(stats.acksForwarded, 2);
    assert.equal(s.pending.size, 0);
  });

  test('an ACK twice, for an unknown seq, or before the update was written counts as unexpected', () => {
    const { groups, stats, joined } = setup();
    const [s, a] = [joined(), joined()];
    const b = joined();
    b.stampOnPush = false; // still queued: not forwarded yet
    groups.update(asSession(s), update(s, 4));
    groups.ack(asSession(a), ack(a, s, 4));
    groups.ack(asSession(a), ack(a, s, 4));
    groups.ack(asSession(a), ack(a, s, 99));
    groups.ack(asSession(b), ack(b, s, 4));
    assert.equal(stats.unexpectedAcks, 3);
    assert.equal(s.ofType(MsgType.ACKED_ALL).length, 0);
  });
});

describe('leaving and dropped destinations', () => {
  test('a destination that leaves completes the entries waiting on it', () => {
    const { groups, joined } = setup();
    const [s, a, b] = [joined(), joined(), joined()];
    groups.update(asSession(s), update(s, 1));
    groups.ack(asSession(a), ack(a, s, 1));
    groups.leave(asSession(b));
    const all = s.ofType(MsgType.ACKED_ALL);
    assert.equal(all.length, 1);
    assert.ok(all[0].type === MsgType.ACKED_ALL);
    assert.deepEqual([all[0].acked, all[0].dropped], [1, 1]);
    assert.deepEqual(a.ofType(MsgType.MEMBER_LEFT).map((m) => m.type === MsgType.MEMBER_LEFT && m.id), [b.id]);
    assert.equal(b.group, null);
    assert.equal(b.ready, false);
    assert.equal(groups.memberCount, 2);
  });

  test('updates still queued for a leaving member are dropped from their entries', () => {
    const { groups, joined } = setup();
    const [s, q] = [joined(), joined()];
    q.stampOnPush = false;
    groups.update(asSession(s), update(s, 2));
    const entry = s.pending.get(2);
    assert.ok(entry);
    q.queuedEntries.push(entry);
    groups.leave(asSession(q));
    assert.equal(entry.dropped, 1);
    assert.equal(s.pending.size, 0);
    assert.equal(s.ofType(MsgType.ACKED_ALL).length, 1);
  });

  test('a sender that leaves takes its pending updates along; the last one out ends the group', () => {
    const { groups, joined } = setup();
    const [s, a] = [joined(), joined()];
    groups.update(asSession(s), update(s));
    groups.leave(asSession(s));
    assert.equal(s.pending.size, 0);
    groups.leave(asSession(a));
    assert.equal(groups.groups.size, 0);
    assert.equal(groups.memberCount, 0);
    groups.leave(asSession(a)); // twice is harmless
  });

  test('a member never announced leaves without a MEMBER_LEFT', () => {
    const { groups, joined } = setup();
    const a = joined();
    const u = joined('g', { udp: true });
    groups.leave(asSession(u));
    assert.equal(a.ofType(MsgType.MEMBER_LEFT).length, 0);
  });

  test('dropDestination counts a drop once and completes the entry at the last one', () => {
    const { groups, joined } = setup();
    const [s, a, b] = [joined(), joined(), joined()];
    groups.update(asSession(s), update(s, 6));
    const entry = s.pending.get(6);
    assert.ok(entry);
    groups.dropDestination(entry, asSession(a));
    groups.dropDestination(entry, asSession(a));
    assert.equal(entry.dropped, 1);
    assert.equal(s.ofType(MsgType.ACKED_ALL).length, 0);
    groups.dropDestination(entry, asSession(b));
    assert.equal(s.ofType(MsgType.ACKED_ALL).length, 1);
  });

  test('retract: a relay-udp member whose channel closed leaves ACK sets but stays joined', () => {
    const { groups, joined } = setup();
    const s = joined();
    const u = joined('g', { udp: true });
    groups.announce(asSession(u));
    groups.update(asSession(s), update(s, 8));
    groups.retract(asSession(u));
    assert.equal(u.ready, false);
    assert.equal(u.group?.key, 'g:g');
    assert.equal(s.ofType(MsgType.ACKED_ALL).length, 1);
    assert.equal(s.ofType(MsgType.MEMBER_LEFT).length, 1);
  });
});

describe('GroupRegistry.sweep', () => {
  test('gives up on entries older than the ACK timeout, without ACKED_ALL', () => {
    const { groups, stats, joined } = setup();
    const [s, a, b] = [joined(), joined(), joined()];
    groups.update(asSession(s), update(s, 1));
    groups.update(asSession(s), update(s, 2));
    const old = s.pending.get(1);
    assert.ok(old);
    old.createdAt -= 10000;
    groups.sweep(5000);
    assert.equal(stats.ackTimeouts, 2, 'both destinations of update 1');
    assert.equal(old.dropped, 2);
    assert.deepEqual([...s.pending.keys()], [2], 'the fresh one stays');
    assert.equal(s.ofType(MsgType.ACKED_ALL).length, 0, 'the sender times out on its own');
    void a; void b;
  });
});

describe('lagging members (mode relay slow-consumer policy)', () => {
  test('checkLagging marks a WebSocket member that has not ACKed for slowAckMs; relay-udp ones are exempt', () => {
    const { groups, stats, joined } = setup();
    const s = joined();
    const slow = joined();
    const u = joined('g', { udp: true });
    groups.announce(asSession(u));
    groups.update(asSession(s), update(s, 1));
    const entry = s.pending.get(1);
    assert.ok(entry);
    for (const d of entry.dest.keys()) entry.dest.set(d, performance.now() - 10000);
    checkLagging(groups, 5000);
    assert.equal(slow.lagging, true);
    assert.equal(u.lagging, false);
    assert.equal(stats.slowConsumers, 1);
    assert.ok(!entry.dest.has(asSession(slow)));
    assert.equal(entry.dropped, 1);
  });

  test('a lagging member still gets updates but nobody waits for it, until it ACKs again', () => {
    const { groups, stats, joined } = setup();
    const [s, slow] = [joined(), joined()];
    markLagging(groups, asSession(slow));
    markLagging(groups, asSession(slow)); // once
    assert.equal(stats.slowConsumers, 1);
    groups.update(asSession(s), update(s, 1));
    assert.equal(slow.ofType(MsgType.UPDATE).length, 1);
    const all = s.ofType(MsgType.ACKED_ALL);
    assert.equal(all.length, 1, 'nothing to wait for');
    assert.ok(all[0].type === MsgType.ACKED_ALL);
    assert.deepEqual([all[0].acked, all[0].dropped], [0, 1]);
    groups.ack(asSession(slow), ack(slow, s, 1));
    assert.equal(slow.lagging, false);
    assert.equal(stats.slowConsumersRecovered, 1);
    groups.update(asSession(s), update(s, 2));
    assert.ok(s.pending.get(2)?.dest.has(asSession(slow)), 'waited for again');
  });

  test('markLagging leaves relay-faithful senders waiting (published semantics)', () => {
    const { groups, joined } = setup();
    const faithful = joined('g', { batched: false });
    const slow = joined();
    groups.update(asSession(faithful), update(faithful, 1));
    markLagging(groups, asSession(slow));
    assert.ok(faithful.pending.get(1)?.dest.has(asSession(slow)));
    // And a relay-faithful sender's update still waits for a lagging member.
    groups.update(asSession(faithful), update(faithful, 2));
    assert.ok(faithful.pending.get(2)?.dest.has(asSession(slow)));
  });
});

describe('backlog and counts', () => {
  test('backlog counts pending updates, queued messages of both queues and lagging members', () => {
    const { groups, joined } = setup();
    const [s, a] = [joined(), joined()];
    const u = joined('g', { udp: true });
    groups.update(asSession(s), update(s));
    a.out.queue.push({}, {});
    u.dataOut = { queue: [{}] };
    markLagging(groups, asSession(u));
    assert.deepEqual(groups.backlog(), { pending: 1, queued: 3, lagging: 1 });
    for (const m of [s, a, u]) groups.leave(asSession(m));
    assert.deepEqual(groups.backlog(), { pending: 0, queued: 0, lagging: 0 });
  });

  test('memberCount and localGroupCount follow joins and leaves', () => {
    const { groups, joined } = setup();
    const a = joined('g');
    joined('g');
    joined('h');
    assert.equal(groups.memberCount, 3);
    assert.equal(groups.localGroupCount, 2);
    groups.leave(asSession(a));
    assert.equal(groups.memberCount, 2);
  });
});
