// Frame intake: what the relay does with one frame a client sent, on its
// WebSocket or (relay-udp) on its data channel. Both go through the same
// checks into the same group registry; a bad frame on either closes the
// session's WebSocket with the same code. Kept apart from createRelay so each
// check can be driven alone with fake sessions (relay/intake.test.js).

import { CAPABILITY_BITS, CloseCode, HelloFlag, KNOWN_CAPABILITIES, KNOWN_MORE_CAPABILITIES, MoreFlag, MsgType, MsgTypeName, ProtocolError, decode, encode } from '../core/protocol.js';
import { costOf, countsOf } from './budget.js';
import { scanFrame } from './fast-frame.js';
import { onLink } from './link.js';

/** Where a frame arrived: the session's WebSocket or its relay-udp data channel. @typedef {'ws' | 'dc'} FrameSource */
/** A close code and reason for a client that misbehaved. @typedef {[number, string]} Problem */
/** A decoded message with its bytes (type + payload), as decode() returns it. @typedef {import('../core/protocol.js').Message & { body: Uint8Array }} BodyMessage */
/** What the relay reads of an UPDATE (a decoded one, or relay/fast-frame.js's cursor on one). @typedef {{ readonly sender: number, readonly seq: number, readonly body: Uint8Array }} UpdateFields */
/** What the relay reads of an ACK. @typedef {{ readonly sender: number, readonly seq: number, readonly acker: number, readonly body: Uint8Array }} AckFields */
/** What is left of a frame's budget while its messages are handled (relay/budget.js). @typedef {{ free: number, updatesAllowed: boolean }} FrameAllowance */

/**
 * What frame intake needs from the relay around it; createRelay passes the
 * real registry and endpoint, tests pass fakes.
 * @typedef {object} IntakeDeps
 * @property {import('./index.js').RelayContext} ctx options, stats and closeSession
 * @property {Pick<import('./groups.js').GroupRegistry, 'join' | 'update' | 'ack' | 'budget' | 'cluster' | 'scenes'>} groups
 * @property {Pick<import('./udp.js').UdpEndpoint, 'available' | 'unavailableReason' | 'onSignal'>} udp
 * @property {import('./index.js').ReportSink} [reports] where client reports sent as STATS go
 * @property {(s: import('./session.js').Session, hello: import('../core/protocol.js').HelloMsg) => boolean} [resume]
 *   a HELLO with a resume secret: takes over the session it names (relay/resume.js); false when there is none to take
 */

/**
 * The name of a message type for close reasons ('UPDATE', or 'type 42').
 * @param {number} type
 */
export function typeNameOf(type) {
  return MsgTypeName[type] ?? `type ${type}`;
}

/**
 * Counts a frame in and decodes it into the messages it carries (a BATCH's
 * members, or the one message). Nothing here depends on the session's state.
 * @param {Uint8Array | string} data
 * @param {boolean} isBinary
 * @param {FrameSource} source
 * @param {IntakeDeps['ctx']} ctx
 * @returns {{ messages: BodyMessage[] } | { problem: Problem }}
 */
export function readFrame(data, isBinary, source, ctx) {
  const problem = countFrame(data, isBinary, source, ctx);
  if (problem) return { problem };
  const msg = decode(/** @type {Uint8Array} */ (data));
  if (msg instanceof ProtocolError) {
    return { problem: [msg.closeCode, `${msg.code}: ${msg.message}${source === 'dc' ? ' (data channel)' : ''}`] };
  }
  // decode() sets `body` on every message it returns, batched ones included.
  const messages = /** @type {BodyMessage[]} */ (msg.type === MsgType.BATCH ? msg.messages : [msg]);
  return { messages };
}

/**
 * Counts a frame in; refuses text frames and (on a data channel, where no
 * WebSocket library does) frames over maxPayload.
 * @param {Uint8Array | string} data
 * @param {boolean} isBinary
 * @param {FrameSource} source
 * @param {IntakeDeps['ctx']} ctx
 * @returns {Problem | null}
 */
function countFrame(data, isBinary, source, ctx) {
  const { stats, options } = ctx;
  const length = typeof data === 'string' ? Buffer.byteLength(data) : data.length;
  stats.framesIn++;
  stats.bytesIn += length;
  if (source === 'dc') {
    stats.udp.framesIn++;
    stats.udp.bytesIn += length;
    if (length > options.maxPayload) return [CloseCode.TOO_BIG, `data channel message of ${length} bytes, over maxPayload`];
  }
  if (!isBinary || typeof data === 'string') return [CloseCode.BAD_FRAME, 'text frames are not part of the protocol'];
  return null;
}

/**
 * One frame from a client: counted, decoded, rate-limited, then handled
 * message by message; the first problem closes the session. A joined
 * member's frame of UPDATEs and ACKs takes the fast path (relay/fast-frame.js):
 * the same checks, no objects built.
 * @param {IntakeDeps} deps
 * @param {import('./session.js').Session} s
 * @param {Uint8Array | string} data
 * @param {boolean} isBinary
 * @param {FrameSource} source
 */
export function onFrame(deps, s, data, isBinary, source) {
  const { ctx } = deps;
  if (s.closed) return;
  const scanned = s.group && isBinary && typeof data !== 'string' ? scanFrame(data) : null;
  if (scanned) {
    const refused = countFrame(data, isBinary, source, ctx);
    if (refused) ctx.closeSession(s, refused[0], refused[1]);
    else onScannedFrame(deps, s, scanned, source);
    return;
  }
  const read = readFrame(data, isBinary, source, ctx);
  if ('problem' in read) {
    ctx.closeSession(s, read.problem[0], read.problem[1]);
    return;
  }
  const budget = chargeFrame(ctx, s, countsOf(read.messages), source);
  if ('problem' in budget) {
    ctx.closeSession(s, budget.problem[0], budget.problem[1]);
    return;
  }
  for (const m of read.messages) {
    ctx.stats.messagesIn++;
    if (source === 'dc' && s.group && !admitOnDataChannel(deps, m.type, budget)) continue;
    const problem = onMessage(deps, s, m, source);
    if (problem) {
      ctx.closeSession(s, problem[0], problem[1]);
      return;
    }
    // A resuming HELLO handed this socket to the session it took over: the rest of the frame is not this one's.
    if (s.closed) return;
  }
}

/**
 * A frame scanFrame accepted: charged like any other, then its UPDATEs and
 * ACKs handled in place.
 * @param {IntakeDeps} deps
 * @param {import('./session.js').Session} s
 * @param {import('./fast-frame.js').ScannedFrame} m the frame, its cursor on the current message
 * @param {FrameSource} source
 */
function onScannedFrame(deps, s, m, source) {
  const { ctx } = deps;
  // One clock read for the frame: its budgets, its updates' fan-out time, its ACKs' RTS.
  const now = performance.now();
  const budget = chargeFrame(ctx, s, m, source, now);
  if ('problem' in budget) {
    ctx.closeSession(s, budget.problem[0], budget.problem[1]);
    return;
  }
  while (m.next()) {
    ctx.stats.messagesIn++;
    if (source === 'dc' && !admitOnDataChannel(deps, m.type, budget)) continue;
    const problem = m.type === MsgType.ACK ? onAck(deps, s, m, source, now) : onUpdate(deps, s, m, source, now);
    if (problem) {
      ctx.closeSession(s, problem[0], problem[1]);
      return;
    }
    // What it handled may have closed it: a slow consumer's own ACKED_ALL can take its unread queue
    // over the hard bound (4004), and a closed session has no group for the rest of the frame.
    if (s.closed) return;
  }
}

/**
 * The unreliable path (a joined member's data channel): what is over the
 * budget is lost like a packet (relay/budget.js).
 * @param {IntakeDeps} deps
 * @param {number} type
 * @param {FrameAllowance} budget its `free` ACK credit is spent here
 * @returns {boolean} whether the message is handled
 */
function admitOnDataChannel(deps, type, budget) {
  if (type === MsgType.ACK) {
    if (budget.free === 0) { deps.groups.budget.udpDroppedAcks++; return false; }
    budget.free--;
  } else if (type === MsgType.UPDATE && !budget.updatesAllowed) {
    deps.groups.budget.udpDroppedUpdates++;
    return false;
  }
  return true;
}

/**
 * Charges one frame to the session's budgets (relay/budget.js): ACKs paid by
 * credit are free, every other message spends the message bucket, UPDATEs
 * also the UPDATE bucket. A frame that does not fit is refused whole. On the
 * data channel the UPDATEs over their rate are dropped instead (updatesAllowed
 * false) and so are ACKs without credit (past `free`).
 * @param {IntakeDeps['ctx']} ctx
 * @param {import('./session.js').Session} s
 * @param {import('./budget.js').FrameCounts} counts the frame's messages
 * @param {FrameSource} source
 * @param {number} [now] performance.now(), read once per frame
 * @returns {FrameAllowance | { problem: Problem }}
 */
export function chargeFrame(ctx, s, counts, source, now = performance.now()) {
  const cost = costOf(counts, s.ackCredit);
  if (!s.rate.take(cost.charged, now)) {
    return { problem: [CloseCode.RATE_LIMITED, `over ${ctx.options.maxMessagesPerSecond} messages/s (ACKs for updates it was sent excepted)`] };
  }
  s.ackCredit -= cost.credited;
  let updatesAllowed = true;
  if (cost.updates > 0 && !s.updateRate.take(cost.updates, now)) {
    if (source === 'ws') return { problem: [CloseCode.RATE_LIMITED, `over ${ctx.options.maxUpdatesPerSecond} UPDATEs/s`] };
    updatesAllowed = false;
  }
  return { free: cost.credited, updatesAllowed };
}

/**
 * One message of a frame.
 * @param {IntakeDeps} deps
 * @param {import('./session.js').Session} s
 * @param {BodyMessage} m
 * @param {FrameSource} source
 * @returns {Problem | null} a close code and reason if the client misbehaved
 */
export function onMessage(deps, s, m, source) {
  if (source === 'dc' && m.type !== MsgType.UPDATE && m.type !== MsgType.ACK) {
    return [CloseCode.PROTOCOL_VIOLATION, `${typeNameOf(m.type)} is not sent on the data channel`];
  }
  if (m.type === MsgType.HELLO) return onHello(deps, s, m);
  if (!s.group) return [CloseCode.NOT_JOINED, `${typeNameOf(m.type)} before HELLO`];
  switch (m.type) {
    case MsgType.UPDATE:
      return onUpdate(deps, s, m, source);
    case MsgType.ACK:
      return onAck(deps, s, m, source);
    case MsgType.STATS:
      return onStats(deps, s, m);
    case MsgType.SIGNAL:
      if (s.membershipOnly) return onPeerSignal(deps, s, m);
      if (!s.udp) return [CloseCode.PROTOCOL_VIOLATION, 'SIGNAL is only for relay-udp and p2p sessions (HELLO flag UDP or MEMBERSHIP_ONLY)'];
      return deps.udp.onSignal(s, m);
    case MsgType.LINK:
      return onLink(deps, s, m); // a p2p link's UPDATE or ACK through the relay (relay/link.js)
    case MsgType.KEPT_SCENE:
      return onOwnSceneRecords(deps, s, m);
    default:
      return [CloseCode.PROTOCOL_VIOLATION, `${typeNameOf(m.type)} is not sent by clients`];
  }
}

/**
 * A p2p member's own scene edits, for the server to keep (docs/protocol.md §5.14): only from a
 * membership-only session granted KEPT_SCENE, only records it wrote; applied to the relay's copy of
 * the group's scene, forwarded to nobody.
 * @param {IntakeDeps} deps
 * @param {import('./session.js').Session} s
 * @param {import('../core/protocol.js').KeptSceneMsg} m
 * @returns {Problem | null}
 */
export function onOwnSceneRecords(deps, s, m) {
  if (!s.membershipOnly || ((s.more ?? 0) & MoreFlag.KEPT_SCENE) === 0) {
    return [CloseCode.PROTOCOL_VIOLATION, 'KEPT_SCENE is sent only by membership-only (p2p) members granted KEPT_SCENE'];
  }
  const foreign = m.records.find((r) => r.writer !== s.id);
  if (foreign) return [CloseCode.SPOOFED_SENDER, `KEPT_SCENE from ${s.id} carries a record written by ${foreign.writer}`];
  const group = /** @type {import('./groups.js').Group} */ (s.group);
  deps.groups.scenes?.observeRecords(group.key, m.records);
  return null;
}

/**
 * SIGNAL from a p2p member to another of its group (capability PEER_SIGNAL, docs/protocol.md §5.11):
 * passed on unchanged to a p2p member of the group that was granted it; dropped (counted) when
 * there is none such, as a peer that left meanwhile is normal.
 * @param {IntakeDeps} deps
 * @param {import('./session.js').Session} s
 * @param {import('../core/protocol.js').SignalMsg & { body?: Uint8Array }} m
 * @returns {Problem | null}
 */
function onPeerSignal(deps, s, m) {
  const granted = (/** @type {{ capabilities: number | null }} */ x) => ((x.capabilities ?? 0) & HelloFlag.PEER_SIGNAL) !== 0;
  if (!granted(s)) return [CloseCode.PROTOCOL_VIOLATION, 'SIGNAL between members needs capability PEER_SIGNAL'];
  if (m.from !== s.id) return [CloseCode.SPOOFED_SENDER, `SIGNAL from ${s.id} claims ${m.from}`];
  if (m.to === s.id || m.to === 0) return [CloseCode.PROTOCOL_VIOLATION, `SIGNAL to ${m.to}: a p2p member signals another member`];
  const dest = /** @type {import('./groups.js').Group} */ (s.group).members.get(m.to);
  if (dest?.local && dest.membershipOnly && granted(dest) && m.body) dest.push(m.body);
  else deps.ctx.stats.peerSignalsDropped++;
  return null;
}

/**
 * STATS: a client report (a JSON object with `"v": 1`, docs/study.md) goes to
 * the report sink; a refused one is answered with an ERROR (code
 * REPORT_REFUSED) and the session stays open: a report is not worth the
 * client's place in its group. Other STATS, and all of them without a sink,
 * are discarded (docs/protocol.md §5.10).
 * @param {IntakeDeps} deps
 * @param {import('./session.js').Session} s
 * @param {import('../core/protocol.js').StatsMsg} m
 * @returns {null}
 */
export function onStats(deps, s, m) {
  const stats = /** @type {unknown} */ (m.stats);
  if (!deps.reports || typeof stats !== 'object' || stats === null || /** @type {{ v?: unknown }} */ (stats).v !== 1) return null;
  const refused = deps.reports.take(stats, { userAgent: s.userAgent, group: s.group?.name ?? '', clientId: s.id });
  if (refused !== null) {
    s.push(encode({ type: MsgType.ERROR, code: CloseCode.REPORT_REFUSED, reason: refused }).subarray(1));
  }
  return null;
}

/**
 * HELLO: checks it names the group the URL named (if any), takes the session's
 * name and mode from its flags and joins its group.
 * @param {IntakeDeps} deps
 * @param {import('./session.js').Session} s
 * @param {import('../core/protocol.js').HelloMsg} m
 * @returns {Problem | null}
 */
export function onHello(deps, s, m) {
  if (s.group) return [CloseCode.PROTOCOL_VIOLATION, 'HELLO after joining'];
  // The URL placed this connection on a process by its group; a HELLO for
  // another group would undo that placement unseen, so it is refused.
  if (s.urlGroup && s.urlGroup !== m.group) {
    return [CloseCode.GROUP_MISMATCH, `HELLO for group "${m.group}" on a connection opened for group "${s.urlGroup}"`];
  }
  s.name = m.name;
  s.batched = (m.flags & HelloFlag.BATCHED) !== 0;
  s.membershipOnly = (m.flags & HelloFlag.MEMBERSHIP_ONLY) !== 0;
  s.udp = (m.flags & HelloFlag.UDP) !== 0;
  // Capabilities (docs/protocol.md §5.1): this relay grants every one it knows that was asked for.
  s.capabilities = (m.flags & CAPABILITY_BITS) !== 0 ? m.flags & KNOWN_CAPABILITIES : null;
  s.more = (m.flags & HelloFlag.MORE) !== 0 ? (m.more ?? 0) & KNOWN_MORE_CAPABILITIES : null;
  if (s.udp && s.membershipOnly) return [CloseCode.PROTOCOL_VIOLATION, 'HELLO flags UDP and MEMBERSHIP_ONLY exclude each other'];
  if (s.udp && !deps.udp.available) return [CloseCode.PROTOCOL_VIOLATION, `relay-udp is not available here: ${deps.udp.unavailableReason}`];
  if (m.resume && deps.resume?.(s, m)) return null;
  return deps.groups.join(s, m.group, m.clientId, m.token);
}

/**
 * ACK of a joined session: checked, then counted toward its update's ACKED_ALL (or forwarded).
 * @param {IntakeDeps} deps
 * @param {import('./session.js').Session} s
 * @param {AckFields} m
 * @param {FrameSource} source
 * @param {number} [now] the frame's clock reading
 * @returns {Problem | null}
 */
export function onAck(deps, s, m, source, now = performance.now()) {
  if (s.udp && source !== 'dc') return [CloseCode.PROTOCOL_VIOLATION, 'a relay-udp client sends ACK on its data channel'];
  if (m.acker !== s.id) return [CloseCode.SPOOFED_SENDER, `ACK from ${s.id} claims acker ${m.acker}`];
  deps.groups.ack(s, m, now);
  return null;
}

/**
 * UPDATE of a joined session: checked, then fanned out.
 * @param {IntakeDeps} deps
 * @param {import('./session.js').Session} s
 * @param {UpdateFields} m
 * @param {FrameSource} source
 * @param {number} [now] the frame's clock reading
 * @returns {Problem | null}
 */
export function onUpdate(deps, s, m, source, now = performance.now()) {
  if (s.membershipOnly) return [CloseCode.PROTOCOL_VIOLATION, 'UPDATE on a membership-only connection'];
  if (s.udp && source !== 'dc') return [CloseCode.PROTOCOL_VIOLATION, 'a relay-udp client sends UPDATE on its data channel'];
  if (m.sender !== s.id) return [CloseCode.SPOOFED_SENDER, `UPDATE from ${s.id} claims sender ${m.sender}`];
  if (m.seq <= s.replayFloor) {
    deps.ctx.stats.replaysDropped++; // a resumed member sent again what the relay had (§8.10): no reuse
    return null;
  }
  if (s.pending.has(m.seq)) return [CloseCode.PROTOCOL_VIOLATION, `UPDATE seq ${m.seq} reused while awaiting its ACKs`];
  deps.groups.update(s, m, now);
  return null;
}
