// The relay target of the fuzz run: WebSocket frames to /relay (random,
// truncated, oversized, spoofed, valid but wrong ...), and the oracle that
// says, from docs/protocol.md, how the relay must end each case's socket.

import { CloseCode, HelloFlag, MsgType, ProtocolError, decode, encode } from '../../core/protocol.js';

/** @typedef {import('../shared/rng.js').Rng} Rng */
/** @typedef {import('./fuzz-world.js').FuzzWorld} FuzzWorld */
/** @typedef {import('./fuzz-world.js').WsFrame} WsFrame */
/** @typedef {import('./fuzz-world.js').RelayCase} RelayCase */

/** A probe that ends every socket whose input the relay tolerates: version 2 -> 4001. */
export const PROBE = Uint8Array.of(2, MsgType.ACK);

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
    () => ({ type: MsgType.KEPT_SCENE, records: [{ id: r.int(1, 9), version: 1, writer: 1, kind: 1, removed: false, pose: [0, 0, 0, 0, 0, 0, 1] }] }),
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

/** UPDATE flags other than OBJECT and SCENE (docs/protocol.md §15). @param {RelayCaseContext} x */
function badUpdateFlagsCase({ r, id, join }) {
  const full = encode(updateMsg(r, id, 1));
  full[46] = r.pick([4, 5, 6, 0x80, 0xff]);
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
export function relayCase(r, index, w) {
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
