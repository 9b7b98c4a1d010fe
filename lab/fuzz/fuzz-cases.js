// The fuzz run's test cases and what each must lead to. Pure functions of
// (seed, index): the same seed gives the same cases in the same order, so a
// failure found by `carlab fuzz --seed S` is found again by the same command.
//
// Four targets, each with the outcome docs/protocol.md (relay) or
// docs/security.md (PeerServer, handshakes) documents:
//   relay   WebSocket frames to /relay: the relay closes the socket with a
//           4000..4008 or 1009 code, or (tolerated input) keeps it open: then
//           a final probe frame (version byte 2) must get 4001;
//   peer    messages on the PeerServer WebSocket: 4000, 4005, 4008, 1009, or
//           PeerServer's own ERROR / ID-TAKEN message and a close without code (1005);
//   raw     raw TCP: broken upgrade requests (HTTP 400/403/404/405/431), broken
//           WebSocket framing after a good handshake (1002/1007/1009), aborts;
//   http    HTTP requests under /peerjs and traversal attempts: any status
//           below 500, a complete answer, nothing from outside the web root.

import { RELAY_LIMITS } from '../../core/defaults.js';
import { BUDGET_DEFAULTS } from '../../relay/budget.js';
import { CloseCode, HelloFlag, MsgType, ProtocolError, decode, encode } from '../../core/protocol.js';
import { makeRng } from '../shared/rng.js';

/** @typedef {import('../shared/rng.js').Rng} Rng */

/** A probe that ends every socket whose input the relay tolerates: version 2 -> 4001. */
export const PROBE = Uint8Array.of(2, MsgType.ACK);

/** PeerJS message types a client sends (signaling/index.js PEERJS_CLIENT_TYPES). */
const PEER_TYPES = ['HEARTBEAT', 'OFFER', 'ANSWER', 'CANDIDATE', 'LEAVE'];

// ------------------------------------------------------------------ random

/**
 * The PRNG of case `index` of run `seed`: independent of the cases before it,
 * so cases can run in any order and concurrently.
 * @param {number} seed @param {number} index
 */
export function caseRng(seed, index) {
  let h = (seed ^ Math.imul(index + 1, 0x9e3779b1)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0;
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0;
  return makeRng((h ^ (h >>> 16)) >>> 0);
}

// ------------------------------------------------------------------ the world the cases see

/**
 * What the cases know of the system under test.
 * @typedef {object} FuzzWorld
 * @property {number} seed
 * @property {number} maxPayload relay and PeerServer maxPayload
 * @property {number} burst relay per-socket message burst
 * @property {number} updateBurst relay per-socket UPDATE burst (relay/budget.js)
 * @property {number} peerBurst PeerServer per-socket message burst
 * @property {string} peerKey PeerServer key
 * @property {boolean} udpAvailable the relay can do relay-udp
 * @property {{ name: string, token: string, ids: number[] }[]} goodGroups groups of well-behaved clients
 * @property {{ id: string, token: string }} sentinel a well-behaved PeerJS peer whose id is taken
 */

/**
 * @param {number} seed
 * @param {Partial<FuzzWorld>} [over]
 * @returns {FuzzWorld}
 */
export function makeWorld(seed, over = {}) {
  return {
    seed,
    maxPayload: RELAY_LIMITS.maxPayload,
    burst: RELAY_LIMITS.burstFactor * RELAY_LIMITS.maxMessagesPerSecond,
    updateBurst: BUDGET_DEFAULTS.maxUpdatesBurst,
    peerBurst: 1000,
    peerKey: `fuzz-key-${seed}`,
    udpAvailable: true,
    goodGroups: [
      { name: `fuzz-good-open-${seed}`, token: '', ids: [101, 102, 103] },
      { name: `fuzz-good-locked-${seed}`, token: `good-token-${seed}`, ids: [201, 202, 203] },
    ],
    sentinel: { id: `fuzz-sentinel-b-${seed}`, token: `sentinel-${seed}` },
    ...over,
  };
}

// ------------------------------------------------------------------ case shapes

/**
 * @typedef {{ bytes: Uint8Array } | { text: string }} WsFrame
 *
 * @typedef {object} RelayCase
 * @property {'relay'} target
 * @property {string} name
 * @property {WsFrame[]} frames sent in order, without waiting
 *
 * @typedef {object} PeerCase
 * @property {'peer'} target
 * @property {string} name
 * @property {Record<string, string>} query key, id, token (any may be missing or wrong)
 * @property {{ data: string | Uint8Array, binary: boolean }[]} frames
 * @property {string | null} firstMessage PeerServer's first message type we must see, or null for any
 *
 * @typedef {object} RawCase
 * @property {'raw'} target
 * @property {string} name
 * @property {'relay' | 'peer' | 'other'} path which endpoint it aims at
 * @property {Uint8Array} request bytes of the HTTP request
 * @property {Uint8Array | null} afterUpgrade WebSocket bytes to send once the 101 came
 * @property {boolean} halfClose end our side after the request
 * @property {boolean} abort destroy the socket right after sending (nothing to check)
 * @property {(number | string)[]} expect HTTP statuses, 'ws:<code>' closes, 'closed', 'any'
 *
 * @typedef {object} HttpCase
 * @property {'http'} target
 * @property {string} name
 * @property {Uint8Array} request
 * @property {boolean} traversal its answer must not leak a file from outside the web root
 *
 * @typedef {RelayCase | PeerCase | RawCase | HttpCase} FuzzCase
 */

// ------------------------------------------------------------------ relay messages

const POSE = /** @type {import('../../core/protocol.js').Pose} */ ([0, 1, 2, 0, 0, 0, 1]);

/** @param {Rng} r */
const anyPose = (r) => /** @type {any} */ (Array.from({ length: 7 }, () => (r.next() - 0.5) * 10));

/** @param {Rng} r @param {number} sender @param {number} seq */
const updateMsg = (r, sender, seq) => ({
  type: MsgType.UPDATE, sender, seq, sendTime: r.next() * 1e6, pose: anyPose(r),
  object: r.chance(0.2) ? { pose: POSE, version: r.int(0, 1000) } : null,
});

/** @param {number} sender @param {number} seq @param {number} acker */
const ackMsg = (sender, seq, acker) => ({ type: MsgType.ACK, sender, seq, acker });

/**
 * @param {string} group @param {number} clientId @param {object} [more]
 */
const helloMsg = (group, clientId, more = {}) => ({
  type: MsgType.HELLO, flags: HelloFlag.BATCHED, clientId, group, name: 'fuzz', token: '', ...more,
});

/** @param {any} m */
const bin = (m) => ({ bytes: encode(m) });

/** A message only the relay sends. @param {Rng} r */
function serverOnlyMsg(r) {
  return r.pick([
    () => ({ type: MsgType.WELCOME, clientId: r.int(1, 9), serverTime: 0, members: [{ id: 1, name: 'x' }] }),
    () => ({ type: MsgType.MEMBER_JOINED, id: r.int(1, 9), name: 'x' }),
    () => ({ type: MsgType.MEMBER_LEFT, id: r.int(1, 9) }),
    () => ({ type: MsgType.ACKED_ALL, sender: r.int(1, 9), seq: 1, acked: 1, dropped: 0 }),
    () => ({ type: MsgType.ERROR, code: 4000, reason: 'nope' }),
  ])();
}

/** A valid message a client may send once joined as `id`. @param {Rng} r @param {number} id @param {number} seq */
function clientMsg(r, id, seq) {
  return r.pick([
    () => updateMsg(r, id, seq),
    () => ackMsg(r.int(1, 300), r.int(1, 1e6), id),
    () => ({ type: MsgType.STATS, clientId: id, stats: { rt: [r.next()], note: r.ascii(r.int(0, 40)) } }),
    () => ({ type: MsgType.SIGNAL, from: id, to: 0, payload: r.ascii(r.int(0, 80)) }),
  ])();
}

/** Frame bytes with a few random bytes changed (never the version byte, sometimes the type). @param {Rng} r @param {Uint8Array} bytes */
function mutate(r, bytes) {
  const out = bytes.slice();
  const flips = r.int(1, 4);
  for (let i = 0; i < flips && out.length > 1; i++) out[r.int(1, out.length - 1)] = r.int(0, 255);
  return out;
}

/** Invalid UTF-8 in a HELLO's group. @param {number} id */
function helloWithBadUtf8(id) {
  const good = encode(helloMsg('ab', id));
  // [1, 1, flags, id x4, len=2, 'a', 'b', ...] -> group bytes 0xc3 0x28 (invalid)
  const out = good.slice();
  out[8] = 0xc3;
  out[9] = 0x28;
  return out;
}

/**
 * What every relay case builder gets: the case's rng and kind, an id and a
 * group no one else has, HELLOs for that group and for a well-behaved one.
 * @typedef {object} RelayCaseContext
 * @property {Rng} r
 * @property {FuzzWorld} w
 * @property {number} kind which of RELAY_CASES (a builder may serve two kinds)
 * @property {number} id
 * @property {string} own
 * @property {WsFrame} join
 * @property {FuzzWorld['goodGroups'][0]} good
 * @property {WsFrame} joinGood
 */

/** @param {string} name @param {WsFrame[]} frames @returns {RelayCase} */
const relayFrames = (name, frames) => ({ target: 'relay', name, frames });

/** Random bytes, before or after joining. @param {RelayCaseContext} x */
function randomBytesCase({ r, kind, join }) {
  const len = r.int(0, 300);
  const b = r.bytes(len);
  if (len > 0 && r.chance(0.7)) b[0] = 1;
  if (len > 1 && r.chance(0.8)) b[1] = r.int(0, 15);
  return relayFrames(kind ? 'random-bytes-joined' : 'random-bytes', kind ? [join, { bytes: b }] : [{ bytes: b }]);
}

/** A valid message cut short. @param {RelayCaseContext} x */
function truncatedCase({ r, id, own, join }) {
  const m = r.pick([() => updateMsg(r, id, 1), () => ackMsg(1, 1, id), () => helloMsg(own + 'x', id),
    () => ({ type: MsgType.BATCH, messages: [ackMsg(1, 1, id), ackMsg(1, 2, id)] }),
    () => ({ type: MsgType.STATS, clientId: id, stats: { a: 1 } }),
    () => ({ type: MsgType.SIGNAL, from: id, to: 0, payload: '{}' })])();
  const full = encode(m);
  return relayFrames('truncated', [join, { bytes: full.subarray(0, r.int(1, full.length - 1)) }]);
}

/** Trailing bytes. @param {RelayCaseContext} x */
function trailingBytesCase({ r, id, join }) {
  const full = encode(r.chance(0.5) ? updateMsg(r, id, 1) : ackMsg(1, 1, id));
  const out = new Uint8Array(full.length + r.int(1, 20));
  out.set(full);
  return relayFrames('trailing-bytes', [join, { bytes: out }]);
}

/** Oversized: over maxPayload. @param {RelayCaseContext} x */
function oversizedCase({ r, w, join }) {
  const b = r.bytes(w.maxPayload + r.int(1, 4096));
  b[0] = 1;
  return relayFrames('oversized', r.chance(0.5) ? [join, { bytes: b }] : [{ bytes: b }]);
}

/** A text frame. @param {RelayCaseContext} x */
function textFrameCase({ r, join }) {
  return relayFrames('text-frame', r.chance(0.5) ? [join, { text: r.ascii(r.int(0, 200)) }] : [{ text: r.ascii(r.int(0, 200)) }]);
}

/** Wrong version byte. @param {RelayCaseContext} x */
function badVersionCase({ r, id, own, join }) {
  const full = encode(r.chance(0.5) ? helloMsg(own, id) : updateMsg(r, id, 1));
  full[0] = r.pick([0, 2, 3, 0x7f, 0xff]);
  return relayFrames('bad-version', r.chance(0.5) ? [join, { bytes: full }] : [{ bytes: full }]);
}

/** Unknown type. @param {RelayCaseContext} x */
function unknownTypeCase({ r, join }) {
  return relayFrames('unknown-type', [join, { bytes: Uint8Array.of(1, r.pick([0, 12, 13, 99, 200, 255]), ...r.bytes(r.int(0, 30))) }]);
}

/** A valid non-HELLO message before HELLO. @param {RelayCaseContext} x */
function beforeHelloCase({ r, id }) {
  return relayFrames('before-hello', [bin(r.chance(0.2) ? serverOnlyMsg(r) : clientMsg(r, id, 1))]);
}

/** Spoofed sender/acker, in an own group or a well-behaved one. @param {RelayCaseContext} x */
function spoofedCase({ r, join, joinGood, good }) {
  return relayFrames('spoofed', [r.chance(0.5) ? joinGood : join,
    bin(r.chance(0.5) ? updateMsg(r, r.pick(good.ids), 1) : ackMsg(r.pick(good.ids), 1, r.pick(good.ids)))]);
}

/** Second HELLO. @param {RelayCaseContext} x */
function secondHelloCase({ id, own, join }) {
  return relayFrames('second-hello', [join, bin(helloMsg(own + 'b', id + 1))]);
}

/** A message only the relay sends. @param {RelayCaseContext} x */
function serverOnlyCase({ r, join, joinGood }) {
  return relayFrames('server-only', [r.chance(0.5) ? joinGood : join, bin(serverOnlyMsg(r))]);
}

/** Nested BATCH (encode refuses to make one: build it by hand). @param {RelayCaseContext} x */
function nestedBatchCase({ id, join }) {
  const inner = encode({ type: MsgType.BATCH, messages: [ackMsg(1, 1, id)] }).subarray(1);
  const out = new Uint8Array(4 + 2 + inner.length);
  out.set([1, MsgType.BATCH, 0, 1, inner.length >> 8, inner.length & 0xff]);
  out.set(inner, 6);
  return relayFrames('nested-batch', [join, { bytes: out }]);
}

/** Huge count, few items; or count 0 (tolerated). @param {RelayCaseContext} x */
function batchCountCase({ r, id, join }) {
  const items = r.int(0, 3);
  const body = encode({ type: MsgType.BATCH, messages: Array.from({ length: items }, (_, i) => ackMsg(1, i + 1, id)) });
  const count = r.chance(0.8) ? r.int(items + 1, 65535) : 0;
  if (count === 0) return relayFrames('batch-count-0', [join, { bytes: Uint8Array.of(1, MsgType.BATCH, 0, 0) }]);
  body[2] = count >> 8;
  body[3] = count & 0xff;
  return relayFrames('batch-huge-count', r.chance(0.3) ? [{ bytes: body }] : [join, { bytes: body }]);
}

/** More messages in one frame than the rate limit's burst. @param {RelayCaseContext} x */
function floodCase({ r, w, id, join }) {
  const n = w.burst + r.int(100, 300);
  return relayFrames('flood', [join, bin({ type: MsgType.BATCH, messages: Array.from({ length: n }, (_, i) => ackMsg(1, i + 1, id)) })]);
}

/** Valid messages, then a spoofed one, in one BATCH. @param {RelayCaseContext} x */
function batchThenSpoofCase({ r, id, join, joinGood }) {
  const valid = Array.from({ length: r.int(1, 5) }, (_, i) => updateMsg(r, id, i + 1));
  return relayFrames('batch-then-spoof', [r.chance(0.5) ? joinGood : join,
    bin({ type: MsgType.BATCH, messages: [...valid, updateMsg(r, id + 7, 99)] })]);
}

/** UPDATE flags other than OBJECT. @param {RelayCaseContext} x */
function badUpdateFlagsCase({ r, id, join }) {
  const full = encode(updateMsg(r, id, 1));
  full[46] = r.pick([2, 3, 4, 0x80, 0xff]);
  return relayFrames('bad-update-flags', [join, { bytes: full.subarray(0, full[46] & 1 ? full.length : 47) }]);
}

/** Invalid UTF-8, empty group. @param {RelayCaseContext} x */
function badGroupCase({ r, id }) {
  return relayFrames(r.chance(0.5) ? 'bad-utf8' : 'empty-group', [{ bytes: r.chance(0.5) ? helloWithBadUtf8(id) : encode(helloMsg('', id)) }]);
}

/** HELLO flag combinations that forbid what follows. @param {RelayCaseContext} x */
function helloFlagsCase({ r, id, own }) {
  const flags = r.pick([HelloFlag.UDP | HelloFlag.MEMBERSHIP_ONLY, HelloFlag.MEMBERSHIP_ONLY, HelloFlag.UDP | HelloFlag.BATCHED]);
  return relayFrames('hello-flags', [bin(helloMsg(own, id, { flags })), bin(r.chance(0.5) ? updateMsg(r, id, 1) : ackMsg(1, 1, id))]);
}

/** The locked group without its token. @param {RelayCaseContext} x */
function wrongTokenCase({ r, w, id, good }) {
  const locked = w.goodGroups.find((g) => g.token) ?? good;
  return relayFrames('wrong-token', [bin(helloMsg(locked.name, id, { token: r.chance(0.5) ? '' : r.word(r.int(1, 30)) }))]);
}

/** A well-behaved client's id. @param {RelayCaseContext} x */
function idTakenCase({ r, good }) {
  return relayFrames('id-taken', [bin(helloMsg(good.name, r.pick(good.ids), { token: good.token }))]);
}

/** Tolerated input (ignored ACKs, STATS, empty BATCHes, updates), then the probe. @param {RelayCaseContext} x */
function toleratedCase({ r, id, join, joinGood, good }) {
  const inGood = r.chance(0.3);
  const frames = [inGood ? joinGood : join];
  let seq = 0;
  for (let i = r.int(1, 6); i > 0; i--) {
    frames.push(r.pick([
      () => bin(ackMsg(r.int(1, 300), r.int(1, 1e6), id)),
      () => bin({ type: MsgType.STATS, clientId: id, stats: { n: r.int(0, 9), s: r.ascii(r.int(0, 50)) } }),
      () => ({ bytes: Uint8Array.of(1, MsgType.BATCH, 0, 0) }),
      () => bin(updateMsg(r, id, ++seq)),
      () => bin({ type: MsgType.BATCH, messages: [updateMsg(r, id, ++seq), ackMsg(r.pick(good.ids), r.int(1, 100), id)] }),
    ])());
  }
  return relayFrames(inGood ? 'tolerated-in-group' : 'tolerated', frames);
}

/** A valid frame with random bytes changed. @param {RelayCaseContext} x */
function mutatedCase({ r, id, join }) {
  const m = r.chance(0.3)
    ? { type: MsgType.BATCH, messages: Array.from({ length: r.int(1, 4) }, (_, i) => clientMsg(r, id, i + 1)) }
    : clientMsg(r, id, 1);
  return relayFrames('mutated', [join, { bytes: mutate(r, encode(m)) }]);
}

/** One seq twice while awaiting its ACKs. @param {RelayCaseContext} x */
function reusedSeqCase({ r, id, joinGood }) {
  const u = updateMsg(r, id, r.int(1, 1000));
  return relayFrames('reused-seq', [joinGood, bin({ type: MsgType.BATCH, messages: [u, { ...u }] })]);
}

/** STATS: not JSON, or a length over the limit. @param {RelayCaseContext} x */
function badStatsCase({ r, id, join }) {
  const bad = encode({ type: MsgType.STATS, clientId: id, stats: { a: 1 } });
  if (r.chance(0.5)) bad[bad.length - 1] = 0x7b; // '{' : not valid JSON any more
  else bad.set([0x7f, 0xff, 0xff, 0xff], 6); // u32 length 2 GiB
  return relayFrames('bad-stats', [join, { bytes: bad }]);
}

/** relay-udp signaling garbage. @param {RelayCaseContext} x */
function udpSignalCase({ r, id, own }) {
  const payload = r.pick([
    () => r.ascii(r.int(0, 60)),
    () => JSON.stringify({ type: 'offer', attempt: r.int(-1, 3) }),
    () => JSON.stringify({ type: 'offer', attempt: 1, sdp: r.chance(0.5) ? '' : `v=0\r\n${r.ascii(r.int(0, 80))}` }),
    () => JSON.stringify({ type: 'candidate', attempt: 1, candidate: r.chance(0.5) ? 7 : r.ascii(20) }),
    () => JSON.stringify({ type: r.word(5), attempt: 1 }),
    () => JSON.stringify([1, 2]),
  ])();
  const from = r.chance(0.8) ? id : id + 1;
  const to = r.chance(0.8) ? 0 : r.int(1, 9);
  return relayFrames('udp-signal', [bin(helloMsg(own, id, { flags: HelloFlag.UDP | HelloFlag.BATCHED })),
    bin({ type: MsgType.SIGNAL, from, to, payload })]);
}

/**
 * The relay case builders by kind (r.int(0, 29)); a builder listed twice is
 * drawn twice as often. Append only: a kind's position is part of what a seed reproduces.
 */
const RELAY_CASES = [
  randomBytesCase, randomBytesCase, truncatedCase, truncatedCase, trailingBytesCase, oversizedCase,
  textFrameCase, badVersionCase, unknownTypeCase, beforeHelloCase, beforeHelloCase, spoofedCase,
  secondHelloCase, serverOnlyCase, nestedBatchCase, batchCountCase, floodCase, batchThenSpoofCase,
  badUpdateFlagsCase, badGroupCase, helloFlagsCase, wrongTokenCase, idTakenCase, toleratedCase,
  toleratedCase, mutatedCase, mutatedCase, reusedSeqCase, badStatsCase, udpSignalCase,
];

/**
 * A relay case: a name and the frames. Groups the fuzzer creates are unique
 * per case; when it joins a well-behaved group it uses an id no one else has.
 * @param {Rng} r @param {number} index @param {FuzzWorld} w
 * @returns {RelayCase}
 */
function relayCase(r, index, w) {
  const id = 1_000_000 + index; // unique: never a good client's, never another case's
  const own = `fz-${w.seed}-${index}`;
  const join = bin(helloMsg(own, id));
  const good = r.pick(w.goodGroups);
  const joinGood = bin(helloMsg(good.name, id, { token: good.token }));
  const kind = r.int(0, RELAY_CASES.length - 1);
  return RELAY_CASES[kind]({ r, w, kind, id, own, join, good, joinGood });
}

// ------------------------------------------------------------------ relay oracle

/** @typedef {import('../../core/protocol.js').Message} RelayMessage */

/**
 * What the oracle knows of one relay connection while it reads the frames.
 * @typedef {object} RelayOracleState
 * @property {boolean} joined
 * @property {number | null} id the connection's client id; null: the relay picked it, we cannot know it
 * @property {number} flags the HELLO's flags
 * @property {FuzzWorld['goodGroups'][0] | null} good the well-behaved group it joined
 * @property {number} tokens rate-limit tokens left (no refill within a case)
 * @property {number} updateTokens UPDATE tokens left (no refill within a case)
 * @property {Set<number>} seqs UPDATE seqs sent to a well-behaved group
 * @property {number} offers relay-udp offers sent
 * @property {number | null} link the attempt of the last relay-udp offer
 * @property {Set<number>} alternatives close codes that timing or the WebRTC stack may also give
 */

/** @param {FuzzWorld} w @returns {RelayOracleState} */
function relayOracleState(w) {
  return {
    joined: false, id: 0, flags: 0, good: null,
    tokens: w.burst, updateTokens: w.updateBurst, seqs: new Set(), offers: 0, link: null, alternatives: new Set(),
  };
}

/**
 * Before joining only a HELLO may come; a HELLO the relay accepts joins.
 * @param {RelayOracleState} st @param {RelayMessage} m @param {FuzzWorld} w
 * @returns {number | null} the close code, or null if the relay goes on
 */
function helloOutcome(st, m, w) {
  if (m.type !== MsgType.HELLO) return CloseCode.NOT_JOINED;
  const mUdp = (m.flags & HelloFlag.UDP) !== 0;
  const mMembership = (m.flags & HelloFlag.MEMBERSHIP_ONLY) !== 0;
  if (mUdp && mMembership) return CloseCode.PROTOCOL_VIOLATION;
  if (mUdp && !w.udpAvailable) return CloseCode.PROTOCOL_VIOLATION;
  const good = mMembership ? null : w.goodGroups.find((g) => g.name === m.group) ?? null;
  if (good && good.token !== '' && m.token !== good.token) return CloseCode.FORBIDDEN;
  if (good && m.clientId !== 0 && good.ids.includes(m.clientId)) return CloseCode.ID_TAKEN;
  st.joined = true;
  st.id = m.clientId === 0 ? null : m.clientId;
  st.flags = m.flags;
  st.good = good;
  return null;
}

/**
 * Whether a claimed sender/acker/from is the connection's own id. When the
 * relay picked the id we cannot tell, so a spoofing close is possible too.
 * @param {RelayOracleState} st @param {number} claimed
 */
function isOwnId(st, claimed) {
  if (st.id === null) { st.alternatives.add(CloseCode.SPOOFED_SENDER); return true; }
  return claimed === st.id;
}

/**
 * relay-udp signaling: an offer or a candidate for the server, as JSON.
 * @param {RelayOracleState} st @param {import('../../core/protocol.js').SignalMsg} m
 * @returns {number | null}
 */
function signalOutcome(st, m) {
  if ((st.flags & HelloFlag.UDP) === 0) return CloseCode.PROTOCOL_VIOLATION;
  if (!isOwnId(st, m.from)) return CloseCode.SPOOFED_SENDER;
  if (m.to !== 0) return CloseCode.PROTOCOL_VIOLATION;
  let p;
  try { p = JSON.parse(m.payload); } catch { return CloseCode.PROTOCOL_VIOLATION; }
  if (!p || typeof p !== 'object' || !Number.isSafeInteger(p.attempt) || p.attempt < 1) return CloseCode.PROTOCOL_VIOLATION;
  if (p.type === 'offer') {
    if (typeof p.sdp !== 'string' || p.sdp.length === 0) return CloseCode.PROTOCOL_VIOLATION;
    if (++st.offers > 10) return CloseCode.RATE_LIMITED;
    st.alternatives.add(CloseCode.PROTOCOL_VIOLATION); // the WebRTC stack may refuse the offer
    st.link = p.attempt;
    return null;
  }
  if (p.type === 'candidate') return typeof p.candidate === 'string' ? null : CloseCode.PROTOCOL_VIOLATION;
  return CloseCode.PROTOCOL_VIOLATION;
}

/**
 * A message once joined.
 * @param {RelayOracleState} st @param {RelayMessage} m
 * @param {Set<number>} frameSeqs UPDATE seqs seen in this frame
 * @returns {number | null}
 */
function joinedOutcome(st, m, frameSeqs) {
  const udp = (st.flags & HelloFlag.UDP) !== 0;
  const membership = (st.flags & HelloFlag.MEMBERSHIP_ONLY) !== 0;
  switch (m.type) {
    case MsgType.HELLO: return CloseCode.PROTOCOL_VIOLATION;
    case MsgType.UPDATE:
      if (membership || udp) return CloseCode.PROTOCOL_VIOLATION;
      if (!isOwnId(st, m.sender)) return CloseCode.SPOOFED_SENDER;
      if (st.good) {
        // Pending while the well-behaved members have not ACKed: sure within
        // one frame, a matter of timing across frames.
        if (frameSeqs.has(m.seq)) return CloseCode.PROTOCOL_VIOLATION;
        if (st.seqs.has(m.seq)) st.alternatives.add(CloseCode.PROTOCOL_VIOLATION);
        frameSeqs.add(m.seq);
        st.seqs.add(m.seq);
      }
      return null;
    case MsgType.ACK:
      if (udp) return CloseCode.PROTOCOL_VIOLATION;
      if (!isOwnId(st, m.acker)) return CloseCode.SPOOFED_SENDER;
      return null;
    case MsgType.STATS:
      return null;
    case MsgType.SIGNAL:
      return signalOutcome(st, m);
    default:
      return CloseCode.PROTOCOL_VIOLATION; // WELCOME, MEMBER_*, ACKED_ALL, ERROR
  }
}

/**
 * What the relay must do with a relay case, from docs/protocol.md §3, §4,
 * §5.1, §8, §9 and §13.2, written apart from the relay's code. Outcomes are
 * close codes; when the input is tolerated the probe's 4001 is the outcome.
 * Where the documented outcome depends on timing or on the WebRTC stack,
 * every documented possibility is listed.
 * @param {WsFrame[]} frames
 * @param {FuzzWorld} w
 * @returns {{ codes: number[], probe: boolean }} acceptable close codes; probe: send the probe
 */
export function expectRelay(frames, w) {
  const st = relayOracleState(w);
  /** @param {number | null} code */
  const done = (code) => {
    const codes = new Set(st.alternatives);
    codes.add(code ?? CloseCode.BAD_VERSION); // the probe's answer
    return { codes: [...codes].sort(), probe: code === null };
  };
  for (const f of frames) {
    if ('text' in f) return done(CloseCode.BAD_FRAME);
    if (f.bytes.length > w.maxPayload) return done(CloseCode.TOO_BIG);
    const m = decode(f.bytes);
    if (m instanceof ProtocolError) return done(m.closeCode);
    const messages = m.type === MsgType.BATCH ? m.messages : [m];
    // ACKs count like any message here: the flood's connection is alone in
    // its group, so it has no ACK credit (relay/budget.js).
    if (messages.length > st.tokens) return done(CloseCode.RATE_LIMITED);
    st.tokens -= messages.length;
    const updates = messages.filter((x) => x.type === MsgType.UPDATE).length;
    if (updates > st.updateTokens) return done(CloseCode.RATE_LIMITED);
    st.updateTokens -= updates;
    /** @type {Set<number>} */
    const frameSeqs = new Set();
    for (const msg of messages) {
      const code = st.joined ? joinedOutcome(st, msg, frameSeqs) : helloOutcome(st, msg, w);
      if (code !== null) return done(code);
    }
  }
  return done(null);
}

// ------------------------------------------------------------------ PeerServer

/**
 * @param {Rng} r @param {number} index @param {FuzzWorld} w
 * @returns {PeerCase}
 */
function peerCase(r, index, w) {
  /** @type {Record<string, string>} */
  const query = { key: w.peerKey, id: `fz-${w.seed}-${index}`, token: r.word(10) };
  const c = (/** @type {string} */ name, /** @type {PeerCase['frames']} */ frames, first = 'OPEN', q = query) => ({
    target: /** @type {const} */ ('peer'), name, query: q, frames, firstMessage: first,
  });
  const text = (/** @type {string} */ s) => ({ data: s, binary: false });
  const msg = (/** @type {object} */ o) => text(JSON.stringify(o));
  const dst = () => (r.chance(0.3) ? w.sentinel.id : `nobody-${r.word(6)}`);
  const kind = r.int(0, 13);
  switch (kind) {
    case 0: return c('peer-not-json', [text(r.ascii(r.int(0, 100)).replace(/^[[{"\d\-tfn]/, 'x'))]);
    case 1: return c('peer-binary', [{ data: r.bytes(r.int(0, 100)), binary: true }]);
    case 2: return c('peer-not-object', [text(r.pick(['null', '42', '"OFFER"', '[1,2]', 'true']))]);
    case 3: return c('peer-unknown-type', [msg({ type: r.pick(['EXPIRE', 'OPEN', 'ID-TAKEN', 'offer', r.word(6), 7]), dst: dst() })]);
    case 4: return c('peer-bad-dst', [msg({ type: r.pick(['OFFER', 'ANSWER', 'CANDIDATE']), dst: r.pick([7, null, { id: 1 }, ['a']]), payload: {} })]);
    case 5: return c('peer-oversized', [text(`{"type":"HEARTBEAT","x":"${'a'.repeat(w.maxPayload + r.int(0, 1000))}"}`)]);
    case 6: case 7: { // tolerated, then the probe (added by the runner)
      const frames = [];
      for (let i = r.int(1, 5); i > 0; i--) {
        frames.push(msg(r.pick([
          () => ({ type: 'HEARTBEAT' }),
          () => ({ type: r.pick(['OFFER', 'ANSWER', 'CANDIDATE']), dst: dst(), payload: { sdp: r.ascii(r.int(0, 60)), n: r.int(0, 9) } }),
          () => ({ type: 'LEAVE', dst: dst() }),
          () => ({ type: 'LEAVE' }),
        ])()));
      }
      return c('peer-tolerated', frames);
    }
    case 8: return c('peer-bad-key', [], 'ERROR', { ...query, key: r.chance(0.5) ? 'peerjs' : r.word(8) });
    case 9: {
      const q = { ...query };
      delete q[r.pick(['key', 'id', 'token'])];
      return c('peer-missing-param', [], 'ERROR', q);
    }
    case 10: return c('peer-id-taken', [], 'ID-TAKEN', { ...query, id: w.sentinel.id, token: r.word(12) });
    // Ids over 256 characters, and characters PeerJS ids never have (signaling/guard.js).
    case 12: return c('peer-long-id', [], 'ERROR', { ...query, id: `${query.id}-${r.word(r.int(257, 600))}` });
    case 13: return c('peer-bad-id', [], 'ERROR', { ...query, id: `${query.id}${r.pick(['/', '..', '  ', '%', '<', '\u00e9', '--'])}${r.word(3)}` });
    // Rare: it is many frames. Enough over the burst that the refill cannot save it.
    default: return r.chance(0.02)
      ? c('peer-flood', Array.from({ length: w.peerBurst + r.int(300, 500) }, () => msg({ type: 'HEARTBEAT' })))
      : c('peer-tolerated', [msg({ type: 'HEARTBEAT' })]);
  }
}

/**
 * What the PeerServer endpoint must do (docs/security.md, "Signaling").
 * @param {PeerCase} pc
 * @param {FuzzWorld} w
 * @returns {{ codes: number[], probe: boolean }}
 */
export function expectPeer(pc, w) {
  // Refusals come with their own close code since issue 18 (docs/security.md, "Signaling").
  if (pc.firstMessage === 'ID-TAKEN') return { codes: [CloseCode.ID_TAKEN], probe: false };
  if (pc.firstMessage === 'ERROR') {
    const q = pc.query;
    const missing = !q.key || !q.id || !q.token;
    return { codes: [missing ? CloseCode.PROTOCOL_VIOLATION : q.key !== w.peerKey ? CloseCode.FORBIDDEN : CloseCode.PROTOCOL_VIOLATION], probe: false };
  }
  let tokens = w.peerBurst;
  for (const f of pc.frames) {
    const size = typeof f.data === 'string' ? Buffer.byteLength(f.data) : f.data.length;
    if (size > w.maxPayload) return { codes: [CloseCode.TOO_BIG], probe: false };
    if (tokens < 1) return { codes: [CloseCode.RATE_LIMITED], probe: false };
    tokens--;
    if (f.binary) return { codes: [CloseCode.BAD_FRAME], probe: false };
    let m;
    try { m = JSON.parse(/** @type {string} */ (f.data)); } catch { return { codes: [CloseCode.BAD_FRAME], probe: false }; }
    if (m === null || typeof m !== 'object' || Array.isArray(m)) return { codes: [CloseCode.BAD_FRAME], probe: false };
    if (!PEER_TYPES.includes(m.type)) return { codes: [CloseCode.PROTOCOL_VIOLATION], probe: false };
    if (m.dst !== undefined && typeof m.dst !== 'string') return { codes: [CloseCode.PROTOCOL_VIOLATION], probe: false };
  }
  return { codes: [CloseCode.BAD_FRAME], probe: true }; // the probe is text that is not JSON
}

// ------------------------------------------------------------------ raw TCP: handshakes and framing

const te = new TextEncoder();

/** A syntactically valid Sec-WebSocket-Key. @param {Rng} r */
const wsKey = (r) => Buffer.from(r.bytes(16)).toString('base64');

/**
 * @param {object} o
 * @param {string} o.path
 * @param {string} [o.method]
 * @param {string | null} [o.key]
 * @param {string | null} [o.version]
 * @param {string | null} [o.upgrade]
 * @param {string} [o.connection]
 * @param {string | null} [o.origin]
 * @param {string[]} [o.extra]
 */
function upgradeRequest(o) {
  const lines = [`${o.method ?? 'GET'} ${o.path} HTTP/1.1`, 'Host: 127.0.0.1'];
  if (o.upgrade !== null) lines.push(`Upgrade: ${o.upgrade ?? 'websocket'}`);
  lines.push(`Connection: ${o.connection ?? 'Upgrade'}`);
  if (o.key !== null) lines.push(`Sec-WebSocket-Key: ${o.key}`);
  if (o.version !== null) lines.push(`Sec-WebSocket-Version: ${o.version ?? '13'}`);
  if (o.origin) lines.push(`Origin: ${o.origin}`);
  lines.push(...(o.extra ?? []));
  return te.encode(`${lines.join('\r\n')}\r\n\r\n`);
}

/**
 * One WebSocket frame as a client writes it (masked unless told otherwise).
 * @param {object} o
 * @param {number} o.opcode
 * @param {Uint8Array} [o.payload]
 * @param {boolean} [o.fin]
 * @param {number} [o.rsv] bits 4..6 of the first byte
 * @param {boolean} [o.mask]
 * @param {bigint} [o.length64] claim this 64-bit length (the payload is not sent)
 */
export function wsFrame(o) {
  const payload = o.payload ?? new Uint8Array(0);
  const head = [((o.fin ?? true) ? 0x80 : 0) | ((o.rsv ?? 0) << 4) | o.opcode];
  const mask = o.mask ?? true;
  const m = mask ? 0x80 : 0;
  if (o.length64 !== undefined) {
    head.push(m | 127);
    for (let i = 7; i >= 0; i--) head.push(Number((o.length64 >> BigInt(8 * i)) & 0xffn));
  } else if (payload.length < 126) {
    head.push(m | payload.length);
  } else if (payload.length < 65536) {
    head.push(m | 126, payload.length >> 8, payload.length & 0xff);
  } else {
    head.push(m | 127, 0, 0, 0, 0, (payload.length >>> 24) & 0xff, (payload.length >> 16) & 0xff, (payload.length >> 8) & 0xff, payload.length & 0xff);
  }
  const key = [0x12, 0x34, 0x56, 0x78];
  if (mask) head.push(...key);
  const body = o.length64 !== undefined ? new Uint8Array(0) : payload.map((b, i) => (mask ? b ^ key[i % 4] : b));
  const out = new Uint8Array(head.length + body.length);
  out.set(head);
  out.set(body, head.length);
  return out;
}

/**
 * @param {Rng} r @param {number} index @param {FuzzWorld} w
 * @returns {RawCase}
 */
function rawCase(r, index, w) {
  const onPeer = r.chance(0.3);
  const wsPath = onPeer ? `/peerjs/peerjs?key=${w.peerKey}&id=fz-raw-${w.seed}-${index}&token=t${index}` : '/relay';
  const which = /** @type {'relay' | 'peer'} */ (onPeer ? 'peer' : 'relay');
  /** @type {(name: string, request: Uint8Array, expect: RawCase['expect'], more?: Partial<RawCase>) => RawCase} */
  const c = (name, request, expect, more = {}) => ({
    target: 'raw', name, path: which, request, afterUpgrade: null, halfClose: false, abort: false, expect, ...more,
  });
  const kind = r.int(0, 15);
  switch (kind) {
    case 0: return c('hs-bad-key', upgradeRequest({ path: wsPath, key: r.pick(['abc', '', r.ascii(24).replace(/\s/g, 'x'), 'AAAAAAAAAAAAAAAAAAAAAA==x']) }), [400]);
    case 1: return c('hs-no-key', upgradeRequest({ path: wsPath, key: null }), [400]);
    case 2: return c('hs-bad-version', upgradeRequest({ path: wsPath, key: wsKey(r), version: r.pick(['12', '0', 'x', null]) }), [400]);
    case 3: return c('hs-bad-upgrade', upgradeRequest({ path: wsPath, key: wsKey(r), upgrade: r.pick(['h2c', 'websockets', 'TLS/1.0']) }), [400]);
    case 4: return c('hs-method', upgradeRequest({ path: wsPath, key: wsKey(r), method: r.pick(['POST', 'PUT', 'DELETE']) }), [405]);
    case 5: return c('hs-bad-origin', upgradeRequest({ path: wsPath, key: wsKey(r), origin: r.pick(['http://evil.example', 'null', 'https://127.0.0.1.evil.example', 'file://', 'x']) }), [403]);
    case 6: {
      const target = onPeer
        ? r.pick(['/peerjs/other', '/peerjs/peerjs/x', '/peerjsx', '/peerjs/./peerjs', '/peerjs/peerjs#x', 'http://127.0.0.1/peerjs/peerjs'])
        : r.pick(['/relayx', '/relay/', '/RELAY', '/', '/relay/../relay2', `/${r.word(8)}`, '/./relay', '/relay/../relay', '/relay#x', 'http://127.0.0.1/relay', '//relay']);
      return c('hs-wrong-path', upgradeRequest({ path: target, key: wsKey(r) }), [404]);
    }
    case 7: // "Upgrade" without "Connection: Upgrade": a plain request
      return c('hs-no-connection-upgrade', upgradeRequest({ path: wsPath, key: wsKey(r), connection: 'keep-alive', extra: ['Content-Length: 0'] }), [200, 404]);
    case 8: { // bytes that are no HTTP at all
      const b = r.bytes(r.int(1, 400));
      b[0] = r.pick([0x00, 0x01, 0x16, 0x80, 0xff]); // no method starts like this (and not CR/LF, skipped)
      return c('hs-garbage', b, [400, 'closed']);
    }
    case 9: { // a request cut off, then our side ends
      const full = upgradeRequest({ path: wsPath, key: wsKey(r) });
      return c('hs-truncated', full.subarray(0, r.int(1, full.length - 5)), [400, 'closed'], { halfClose: true });
    }
    case 10: // headers too large
      return c('hs-huge-header', upgradeRequest({ path: wsPath, key: wsKey(r), extra: [`X-Fill: ${'a'.repeat(r.int(17, 40) * 1024)}`] }), [431]);
    case 11: // a good handshake, then the connection dies inside a frame
      return c('ws-abort-mid-frame', upgradeRequest({ path: wsPath, key: wsKey(r) }), ['any'], {
        afterUpgrade: wsFrame({ opcode: 2, payload: r.bytes(r.int(10, 200)) }).subarray(0, r.int(1, 8)), abort: true,
      });
    default: { // a good handshake, then broken WebSocket framing
      const bad = r.pick([
        () => [wsFrame({ opcode: 2, payload: r.bytes(10), mask: false }), 1002],
        () => [wsFrame({ opcode: r.pick([3, 4, 5, 6, 7, 0xb, 0xc, 0xf]), payload: r.bytes(4) }), 1002],
        () => [wsFrame({ opcode: 2, payload: r.bytes(4), rsv: r.int(1, 7) }), 1002],
        () => [wsFrame({ opcode: 0, payload: r.bytes(4) }), 1002], // continuation with nothing to continue
        () => [wsFrame({ opcode: 9, payload: r.bytes(126) }), 1002], // control frame over 125 bytes
        () => [wsFrame({ opcode: 9, payload: r.bytes(4), fin: false }), 1002], // fragmented control frame
        () => [wsFrame({ opcode: 8, payload: Uint8Array.of(0x03, 0xe7) }), 1002], // close code 999
        () => [wsFrame({ opcode: 8, payload: Uint8Array.of(0x03) }), 1002], // close payload of 1 byte
        () => [wsFrame({ opcode: 1, payload: Uint8Array.of(0xc3, 0x28, 0xff) }), 1007], // invalid UTF-8 text
        () => [wsFrame({ opcode: 2, length64: 1n << 60n }), 1009],
        () => [wsFrame({ opcode: 2, length64: BigInt(w.maxPayload + r.int(1, 1e6)) }), 1009],
      ])();
      return c('ws-bad-framing', upgradeRequest({ path: wsPath, key: wsKey(r) }), [`ws:${bad[1]}`], { afterUpgrade: /** @type {Uint8Array} */ (bad[0]) });
    }
  }
}

/**
 * @param {Rng} r @param {number} index @param {FuzzWorld} w
 * @returns {HttpCase}
 */
function httpCase(r, index, w) {
  const enc = (/** @type {string} */ s) => s.replace(/[^A-Za-z0-9._~\-/%?=&]/g, (ch) => `%${ch.charCodeAt(0).toString(16).padStart(2, '0')}`);
  const method = r.pick(['GET', 'GET', 'GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH']);
  const kind = r.int(0, 7);
  let path;
  let traversal = false;
  switch (kind) {
    case 0: path = r.pick(['/peerjs', '/peerjs/', `/peerjs/${w.peerKey}/id`, '/peerjs/peerjs/id', `/peerjs/${w.peerKey}/peers`]); break;
    case 1: path = `/peerjs/${enc(r.ascii(r.int(0, 40)))}/${enc(r.ascii(r.int(0, 20)))}`; break;
    case 2: path = `/peerjs/${r.pick(['%zz', '%', '%00', '%ff%fe', '%c3%28', '%2f%2f'])}/id`; break;
    case 3: path = `/peerjs/${'x'.repeat(r.int(1, 8) * 1000)}`; break;
    case 4: path = `/peerjs/${w.peerKey}/id?${enc(r.ascii(r.int(0, 60)))}`; break;
    case 5: case 6: {
      traversal = true;
      const up = r.pick(['../', '..%2f', '%2e%2e/', '%2e%2e%2f', '..\\', '....//', '..%c0%af']);
      path = `${r.pick(['/', '/peerjs/', '/assets/', '/markers/'])}${up.repeat(r.int(1, 8))}${r.pick(['package.json', 'etc/passwd', '.carlab/certs/key.pem', 'server/server.js'])}`;
      break;
    }
    default: path = `/${enc(r.ascii(r.int(0, 30)))}`;
  }
  const body = method === 'POST' || method === 'PUT' || method === 'PATCH' ? r.ascii(r.int(0, 200)) : '';
  const lines = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close'];
  if (r.chance(0.3)) lines.push(`Origin: ${r.pick(['http://evil.example', 'null', 'http://127.0.0.1'])}`);
  if (body) lines.push('Content-Type: application/json', `Content-Length: ${Buffer.byteLength(body)}`);
  return { target: 'http', name: traversal ? 'http-traversal' : `http-peerjs-${kind}`, request: te.encode(`${lines.join('\r\n')}\r\n\r\n${body}`), traversal };
}

/** Case mix: relay frames most, then PeerServer, handshakes and framing, HTTP. */
const MIX = /** @type {const} */ ([['relay', 0.62], ['peer', 0.16], ['raw', 0.12], ['http', 0.10]]);

/**
 * Case `index` of run `seed`.
 * @param {FuzzWorld} w
 * @param {number} index
 * @returns {FuzzCase}
 */
export function generateCase(w, index) {
  const r = caseRng(w.seed, index);
  let x = r.next();
  for (const [target, weight] of MIX) {
    x -= weight;
    if (x < 0 || target === 'http') {
      switch (target) {
        case 'relay': return relayCase(r, index, w);
        case 'peer': return peerCase(r, index, w);
        case 'raw': return rawCase(r, index, w);
        default: return httpCase(r, index, w);
      }
    }
  }
  throw new Error('unreachable');
}

/**
 * Units a case sends, counted as the run's "frames": WebSocket frames
 * (including the relay probe), handshakes and HTTP requests.
 * @param {FuzzCase} c
 * @param {FuzzWorld} w
 */
export function unitsOf(c, w) {
  switch (c.target) {
    case 'relay': return c.frames.length + (expectRelay(c.frames, w).probe ? 1 : 0);
    case 'peer': return Math.max(1, c.frames.length) + (expectPeer(c, w).probe ? 1 : 0); // no frames: the query is the input
    case 'raw': return 1 + (c.afterUpgrade ? 1 : 0);
    default: return 1;
  }
}

/**
 * A digest of the cases [0, n): equal digests mean the same cases.
 * @param {FuzzWorld} w @param {number} n
 */
export async function casesDigest(w, n) {
  const { createHash } = await import('node:crypto');
  const h = createHash('sha256');
  for (let i = 0; i < n; i++) {
    const c = generateCase(w, i);
    h.update(`${i}:${c.target}:${c.name}:`);
    if (c.target === 'relay') for (const f of c.frames) h.update('text' in f ? f.text : f.bytes);
    else if (c.target === 'peer') { h.update(JSON.stringify(c.query)); for (const f of c.frames) h.update(f.data); }
    else h.update(c.request);
  }
  return h.digest('hex');
}
