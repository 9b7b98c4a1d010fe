// Frame intake alone: fake sessions, a fake registry and relay-udp endpoint.
// Each client mistake must close with its own code; good messages must reach
// the registry exactly once.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CloseCode, HelloFlag, MsgType, encode, encodeBatchOfBodies } from '../core/protocol.js';
import { RELAY_DEFAULTS } from './index.js';
import { onFrame, onMessage, readFrame, typeNameOf } from './intake.js';
import { TokenBucket } from './session.js';
import { newBudgetCounters } from './budget.js';
import { RelayStats } from './stats.js';

/** @typedef {import('./session.js').Session} Session */
/** @typedef {import('./intake.js').BodyMessage} BodyMessage */

/** @type {RelayStats[]} */
const allStats = [];
after(() => { for (const s of allStats) s.stop(); });

/**
 * A relay around the intake: records closes, joins, updates, ACKs and SIGNALs.
 * @param {{ udpAvailable?: boolean, rate?: number, updates?: number }} [o]
 */
function setup(o = {}) {
  const stats = new RelayStats();
  allStats.push(stats);
  /** @type {[number, string][]} */
  const closes = [];
  /** @type {string[]} */
  const calls = [];
  const ctx = {
    options: { ...RELAY_DEFAULTS },
    stats,
    scheduleFlush: () => {},
    markBlocked: () => {},
    /** @type {import('./index.js').RelayContext['closeSession']} */
    closeSession: (s, code, reason) => { s.closed = true; closes.push([code, reason]); },
    dropDestination: () => {},
  };
  /** @type {import('./intake.js').IntakeDeps} */
  const deps = {
    ctx,
    groups: {
      join: (s, group, clientId, token) => {
        calls.push(`join ${group} ${clientId} ${token}`);
        s.group = /** @type {import('./groups.js').Group} */ ({ key: `g:${group}` });
        s.id = 7;
        return null;
      },
      update: (_s, m) => { calls.push(`update ${m.seq}`); },
      ack: (_s, m) => { calls.push(`ack ${m.sender}/${m.seq}`); },
      budget: newBudgetCounters(),
      cluster: null,
      scenes: null,
    },
    udp: {
      available: o.udpAvailable ?? true,
      unavailableReason: o.udpAvailable === false ? 'no native module' : '',
      onSignal: (_s, m) => { calls.push(`signal ${m.payload}`); return null; },
    },
  };
  /**
   * A session as intake sees it; joined ones have id 7.
   * @param {{ joined?: boolean, udp?: boolean, membershipOnly?: boolean, urlGroup?: string }} [so]
   */
  const session = (so = {}) => {
    const s = {
      id: so.joined ? 7 : 0, name: '', group: so.joined ? { key: 'g:g' } : null, batched: false,
      membershipOnly: so.membershipOnly ?? false, udp: so.udp ?? false, closed: false, urlGroup: so.urlGroup ?? null,
      pending: new Map(), rate: new TokenBucket(o.rate ?? 1000, o.rate ?? 1000),
      updateRate: new TokenBucket(o.updates ?? 1000, o.updates ?? 1000), ackCredit: 0,
    };
    // Only these fields are read or written by intake.js.
    return /** @type {Session} */ (/** @type {unknown} */ (s));
  };
  return { stats, closes, calls, deps, session };
}

/** @param {import('../core/protocol.js').Message} m */
const frame = (m) => encode(m);
/** @param {import('../core/protocol.js').Message} m */
const body = (m) => encode(m).subarray(1);
/** @param {number} sender @param {number} seq */
const upd = (sender, seq) => /** @type {import('../core/protocol.js').UpdateMsg} */ (
  { type: MsgType.UPDATE, sender, seq, sendTime: 1, pose: [0, 0, 0, 0, 0, 0, 1], object: null });
/** @param {number} flags */
const hello = (flags) => /** @type {import('../core/protocol.js').HelloMsg} */ (
  { type: MsgType.HELLO, flags, clientId: 3, group: 'g', name: 'n', token: 't' });

describe('readFrame', () => {
  test('counts the frame and returns a BATCH\'s messages with their bodies', () => {
    const { stats, deps } = setup();
    const bytes = encodeBatchOfBodies([body(upd(7, 1)), body(upd(7, 2))]);
    const read = readFrame(bytes, true, 'ws', deps.ctx);
    assert.ok('messages' in read);
    assert.deepEqual(read.messages.map((m) => m.type === MsgType.UPDATE && m.seq), [1, 2]);
    assert.deepEqual([...read.messages[0].body], [...body(upd(7, 1))]);
    assert.deepEqual([stats.framesIn, stats.bytesIn, stats.udp.framesIn], [1, bytes.length, 0]);
  });

  test('text frames -> 4000; bad version -> 4001; data channel frames over maxPayload -> 1009', () => {
    const { stats, deps } = setup();
    const text = readFrame('hello', false, 'ws', deps.ctx);
    assert.ok('problem' in text && text.problem[0] === CloseCode.BAD_FRAME);
    const badVersion = new Uint8Array([9, MsgType.UPDATE]);
    const bad = readFrame(badVersion, true, 'ws', deps.ctx);
    assert.ok('problem' in bad && bad.problem[0] === CloseCode.BAD_VERSION);
    const dcBad = readFrame(badVersion, true, 'dc', deps.ctx);
    assert.ok('problem' in dcBad && dcBad.problem[1].endsWith('(data channel)'));
    const big = readFrame(new Uint8Array(RELAY_DEFAULTS.maxPayload + 1), true, 'dc', deps.ctx);
    assert.ok('problem' in big && big.problem[0] === CloseCode.TOO_BIG);
    assert.equal(stats.udp.framesIn, 2);
  });
});

describe('onFrame', () => {
  test('a good frame reaches the registry; a closed session is ignored', () => {
    const { stats, calls, closes, deps, session } = setup();
    const s = session({ joined: true });
    onFrame(deps, s, frame(upd(7, 1)), true, 'ws');
    assert.deepEqual(calls, ['update 1']);
    assert.equal(stats.messagesIn, 1);
    s.closed = true;
    onFrame(deps, s, frame(upd(7, 2)), true, 'ws');
    assert.deepEqual(calls, ['update 1']);
    assert.equal(stats.framesIn, 1);
    assert.deepEqual(closes, []);
  });

  test('over the rate -> 4005, nothing of the frame handled', () => {
    const { calls, closes, deps, session } = setup({ rate: 1 });
    const s = session({ joined: true });
    onFrame(deps, s, encodeBatchOfBodies([body(upd(7, 1)), body(upd(7, 2))]), true, 'ws');
    assert.equal(closes[0][0], CloseCode.RATE_LIMITED);
    assert.deepEqual(calls, []);
  });

  test('the first bad message of a BATCH closes; the rest is not handled', () => {
    const { calls, closes, deps, session } = setup();
    const s = session({ joined: true });
    onFrame(deps, s, encodeBatchOfBodies([body(upd(7, 1)), body(upd(8, 2)), body(upd(7, 3))]), true, 'ws');
    assert.deepEqual(calls, ['update 1']);
    assert.deepEqual(closes.map((c) => c[0]), [CloseCode.SPOOFED_SENDER]);
  });

  test('a message that closed its own sender (a slow consumer over its bound) ends the frame there', () => {
    const { calls, deps, session } = setup();
    const s = session({ joined: true });
    const fanOut = deps.groups.update;
    // handling the first UPDATE closes the sender, as its own ACKED_ALL over the hard bound does (4004)
    deps.groups.update = (sender, m) => { fanOut(sender, m); sender.closed = true; /** @type {any} */ (sender).group = null; };
    onFrame(deps, s, encodeBatchOfBodies([body(upd(7, 1)), body(upd(7, 2)), body(upd(7, 3))]), true, 'ws');
    assert.deepEqual(calls, ['update 1'], 'nothing more of the frame is handled for a closed session');
  });
});

describe('onMessage', () => {
  /**
   * @param {ReturnType<typeof setup>} env
   * @param {Session} s
   * @param {import('../core/protocol.js').Message} m
   * @param {'ws' | 'dc'} [source]
   */
  const handle = (env, s, m, source = 'ws') => {
    const read = readFrame(encode(m), true, source, env.deps.ctx);
    assert.ok('messages' in read);
    return onMessage(env.deps, s, /** @type {BodyMessage} */ (read.messages[0]), source);
  };

  test('HELLO takes name and flags and joins', () => {
    const env = setup();
    const s = session(env);
    assert.equal(handle(env, s, hello(HelloFlag.BATCHED)), null);
    assert.deepEqual([s.name, s.batched, s.membershipOnly, s.udp], ['n', true, false, false]);
    assert.deepEqual(env.calls, ['join g 3 t']);
    assert.equal(handle(env, s, hello(0))?.[0], CloseCode.PROTOCOL_VIOLATION, 'HELLO after joining');
  });

  test('HELLO for another group than the URL named -> 4009; the same group, or a URL naming none, joins', () => {
    const env = setup();
    assert.deepEqual(handle(env, env.session({ urlGroup: 'other' }), hello(0)),
      [CloseCode.GROUP_MISMATCH, 'HELLO for group "g" on a connection opened for group "other"']);
    assert.deepEqual(env.calls, [], 'nothing joined');
    assert.equal(handle(env, env.session({ urlGroup: 'g' }), hello(0)), null);
    assert.equal(handle(env, env.session(), hello(0)), null);
    assert.deepEqual(env.calls, ['join g 3 t', 'join g 3 t']);
  });

  test('HELLO flag checks: UDP with MEMBERSHIP_ONLY, UDP where relay-udp is unavailable', () => {
    const env = setup();
    assert.match(String(handle(env, session(env), hello(HelloFlag.UDP | HelloFlag.MEMBERSHIP_ONLY))?.[1]), /exclude each other/);
    const off = setup({ udpAvailable: false });
    const p = handle(off, session(off), hello(HelloFlag.UDP));
    assert.deepEqual(p, [CloseCode.PROTOCOL_VIOLATION, 'relay-udp is not available here: no native module']);
    assert.deepEqual([...env.calls, ...off.calls], []);
  });

  test('before HELLO -> 4002 with the type\'s name', () => {
    const env = setup();
    assert.deepEqual(handle(env, session(env), upd(0, 1)), [CloseCode.NOT_JOINED, 'UPDATE before HELLO']);
  });

  test('UPDATE checks: membership-only, relay-udp on the WebSocket, spoofed sender, reused seq', () => {
    const env = setup();
    assert.equal(handle(env, env.session({ joined: true, membershipOnly: true }), upd(7, 1))?.[0], CloseCode.PROTOCOL_VIOLATION);
    assert.match(String(handle(env, env.session({ joined: true, udp: true }), upd(7, 1))?.[1]), /on its data channel/);
    assert.equal(handle(env, env.session({ joined: true, udp: true }), upd(7, 1), 'dc'), null);
    assert.equal(handle(env, env.session({ joined: true }), upd(8, 1))?.[0], CloseCode.SPOOFED_SENDER);
    const s = env.session({ joined: true });
    s.pending.set(5, /** @type {import('./session.js').PendingUpdate} */ ({}));
    assert.match(String(handle(env, s, upd(7, 5))?.[1]), /seq 5 reused/);
    assert.deepEqual(env.calls, ['update 1']);
  });

  test('ACK checks: spoofed acker, relay-udp on the WebSocket', () => {
    const env = setup();
    const ackOf = (/** @type {number} */ acker) => /** @type {import('../core/protocol.js').AckMsg} */ ({ type: MsgType.ACK, sender: 2, seq: 1, acker });
    assert.equal(handle(env, env.session({ joined: true }), ackOf(8))?.[0], CloseCode.SPOOFED_SENDER);
    assert.equal(handle(env, env.session({ joined: true, udp: true }), ackOf(7))?.[0], CloseCode.PROTOCOL_VIOLATION);
    assert.equal(handle(env, env.session({ joined: true }), ackOf(7)), null);
    assert.deepEqual(env.calls, ['ack 2/1']);
  });

  test('on the data channel only UPDATE and ACK', () => {
    const env = setup();
    assert.deepEqual(handle(env, env.session({ joined: true, udp: true }), hello(0), 'dc'),
      [CloseCode.PROTOCOL_VIOLATION, 'HELLO is not sent on the data channel']);
  });

  test('STATS accepted; SIGNAL only for relay-udp; server-only types refused', () => {
    const env = setup();
    const joined = env.session({ joined: true });
    assert.equal(handle(env, joined, { type: MsgType.STATS, clientId: 7, stats: {} }), null);
    const signal = /** @type {import('../core/protocol.js').SignalMsg} */ ({ type: MsgType.SIGNAL, from: 7, to: 0, payload: 'x' });
    assert.equal(handle(env, joined, signal)?.[0], CloseCode.PROTOCOL_VIOLATION);
    assert.equal(handle(env, env.session({ joined: true, udp: true }), signal), null);
    assert.deepEqual(env.calls, ['signal x']);
    assert.deepEqual(handle(env, joined, { type: MsgType.MEMBER_LEFT, id: 1 }),
      [CloseCode.PROTOCOL_VIOLATION, 'MEMBER_LEFT is not sent by clients']);
  });
});

/** @param {ReturnType<typeof setup>} env */
function session(env) { return env.session(); }

test('typeNameOf names known types and numbers unknown ones', () => {
  assert.equal(typeNameOf(MsgType.ACKED_ALL), 'ACKED_ALL');
  assert.equal(typeNameOf(42), 'type 42');
});
