// Mode relay's slow-consumer policy, apart from the group state it acts on
// (relay/groups.js): a reliable (WebSocket) destination that has not ACKed an
// update of a mode-relay sender for `slowAckMs` has stopped reading, or cannot
// keep up. It leaves the ACK set of every pending update of mode-relay senders
// (dropped + 1, so they get their ACKED_ALL now) and is marked lagging: it
// still gets every update (stale poses replaced while its queue is held back),
// but no mode-relay sender waits for its ACKs until it sends one again
// (GroupRegistry.ack takes the mark off). relay-faithful senders keep the
// published semantics (every ACK forwarded, waited for until their own
// timeout); relay-udp destinations are exempt: a lost ACK is normal there.
// docs/protocol.md §8.6.

/** @typedef {import('./groups.js').GroupRegistry} GroupRegistry */
/** @typedef {import('./member.js').Member} Member */

/**
 * Marks every destination late by more than slowAckMs as lagging.
 * @param {GroupRegistry} groups
 * @param {number} slowAckMs
 * @param {number} [now]
 */
export function checkLagging(groups, slowAckMs, now = performance.now()) {
  for (const dest of lateDestinations(groups, slowAckMs, now)) markLagging(groups, dest);
}

/**
 * The WebSocket destinations whose copy of a pending mode-relay update has
 * waited more than slowAckMs for its ACK (from the forward, or from the
 * update's arrival while the copy is still queued).
 * @param {GroupRegistry} groups @param {number} slowAckMs @param {number} now
 * @returns {Set<Member>}
 */
export function lateDestinations(groups, slowAckMs, now) {
  /** @type {Set<Member>} */
  const late = new Set();
  for (const group of groups.groups.values()) {
    for (const member of group.members.values()) {
      if (!member.batched) continue;
      for (const entry of member.pending.values()) {
        for (const [dest, forwardedAt] of entry.dest) {
          const since = Number.isNaN(forwardedAt) ? entry.createdAt : forwardedAt;
          if (!dest.udp && now - since > slowAckMs) late.add(dest);
        }
      }
    }
  }
  return late;
}

/**
 * Marks one member lagging: no mode-relay sender of its group waits for it any more.
 * @param {GroupRegistry} groups
 * @param {Member} member
 */
export function markLagging(groups, member) {
  if (member.lagging || !member.group) return;
  member.lagging = true;
  groups.ctx.stats.slowConsumers++;
  for (const other of member.group.members.values()) {
    if (other === member || !other.batched) continue;
    for (const entry of [...other.pending.values()]) {
      const writtenAt = entry.dest.get(member);
      if (writtenAt === undefined) continue;
      // Its path may be dead: what it was handed is kept for a resume to write again (§8.10).
      if (member.local && !member.udp && !Number.isNaN(writtenAt) && entry.body) member.keepForReplay(entry.body);
      groups.dropDestination(entry, member);
    }
  }
}
