// What each member of a group may send, budgeted so that a member that does
// only what the protocol obliges (one UPDATE per cycle, one ACK per UPDATE it
// was sent) can never be closed, whatever the others in its group send:
//
// - ACKs are budgeted by what the member was actually sent: every UPDATE the
//   relay hands to its socket is one ACK credit (Session.ackCredit). An ACK
//   with credit costs nothing; an ACK without (an update never delivered, or
//   ACKed twice) is a message like any other and spends the message bucket.
//   So the ACK load the others cause is paid by their UPDATEs, never by the
//   member's own budget (docs/security.md "Rate limits").
// - UPDATEs are budgeted by rate (Session.updateRate), enough for one per
//   cycle at the shortest sane cycle, with a long burst for a stalled network
//   delivering a backlog at once.
// - A group's fan-out is bounded: each member may cause at most
//   maxGroupForwardsPerSecond / (members) forwards per second (its share); an
//   UPDATE beyond its sender's share is not forwarded (shed, like a stale
//   pose), never a reason to close anyone.
// - Everything else (HELLO, STATS, SIGNAL, ACKs without credit, UPDATEs too)
//   spends the per-connection message bucket (maxMessagesPerSecond).
//
// On a relay-udp data channel (unreliable: a lost message is normal) an
// UPDATE over its rate and an ACK without credit are dropped, not closed; the
// message bucket still closes a connection that floods the channel.

import { MsgType } from '../core/protocol.js';

/** The budgets a relay runs with when no option sets them. */
export const BUDGET_DEFAULTS = Object.freeze({
  /**
   * UPDATEs per second per connection: one per cycle at 16.7 ms (a 60 Hz
   * camera frame), the shortest cycle that makes sense for a pose; the
   * product's cycle is 167 ms (6 per second), pipelined or not.
   */
  maxUpdatesPerSecond: 60,
  /**
   * The UPDATE bucket's size: 10 s at the full rate, 100 s at the default
   * cycle, so a network stall that delivers a backlog at once is absorbed.
   */
  maxUpdatesBurst: 600,
  /**
   * Forwards (UPDATE copies) per second one group may cause, shared equally
   * by its members: 100 members at a 83 ms cycle, 25 members at any rate the
   * UPDATE budget allows. One group cannot take the whole relay.
   */
  maxGroupForwardsPerSecond: 120000,
});

/** A member's fan-out share bucket holds this many seconds of its share. */
export const SHARE_BURST_SECONDS = 2;

/**
 * A member's share of its group's fan-out, in forwards per second.
 * @param {number} groupForwardsPerSecond maxGroupForwardsPerSecond
 * @param {number} members members of the group (on every node), the sender included
 */
export function forwardShare(groupForwardsPerSecond, members) {
  return groupForwardsPerSecond / Math.max(1, members);
}

/**
 * A frame's messages by kind, as the budgets count them.
 * @typedef {{ count: number, acks: number, updates: number }} FrameCounts
 */

/**
 * Counts a decoded frame's messages (a LINK's carried one counts: a p2p
 * link's ACK is paid by the credit its LINK'd UPDATE bought, its UPDATE
 * spends the UPDATE bucket).
 * @param {readonly { type: number, message?: { type: number } }[]} messages
 * @returns {FrameCounts}
 */
export function countsOf(messages) {
  let acks = 0;
  let updates = 0;
  for (const m of messages) {
    const type = m.type === MsgType.LINK && m.message ? m.message.type : m.type;
    if (type === MsgType.ACK) acks++;
    else if (type === MsgType.UPDATE) updates++;
  }
  return { count: messages.length, acks, updates };
}

/**
 * What one frame costs a connection: how many of its ACKs are paid by
 * credit, how many messages spend the message bucket and how many UPDATEs it
 * carries. Pure, so the rules can be checked without a relay.
 * @param {FrameCounts} counts the frame's messages (relay/fast-frame.js counts them in place)
 * @param {number} credit the connection's ACK credit before the frame
 * @returns {{ credited: number, charged: number, updates: number }}
 */
export function costOf(counts, credit) {
  const credited = Math.min(counts.acks, credit);
  return { credited, charged: counts.count - credited, updates: counts.updates };
}

/**
 * What the budgets did since the relay started (relay metrics `budget`).
 * @typedef {object} BudgetCounters
 * @property {number} shedUpdates UPDATEs not forwarded: over their sender's share of the group's fan-out
 * @property {number} shedForwards the copies those would have been
 * @property {number} udpDroppedUpdates relay-udp UPDATEs over their sender's UPDATE rate, dropped
 * @property {number} udpDroppedAcks relay-udp ACKs without credit, dropped
 */

/** @returns {BudgetCounters} all zero */
export function newBudgetCounters() {
  return { shedUpdates: 0, shedForwards: 0, udpDroppedUpdates: 0, udpDroppedAcks: 0 };
}
