// What a member of a working group is to the group logic (relay/groups.js),
// wherever its phone is connected: a Session (its WebSocket on this node,
// relay/session.js, with a relay-udp data channel or without) or a
// RemoteMember (connected to another node of the cluster, relay/cluster.js).
// The group logic reads the member's fields and asks it, never its class:
// `local` tells the two apart where they differ (who writes to the phone).

/**
 * The fields and methods every member has.
 * @typedef {object} MemberInterface
 * @property {number} id its client id in the group
 * @property {string} name
 * @property {import('./groups.js').Group | null} group
 * @property {boolean} local whether its phone is connected to this node (a Session)
 * @property {string | null} node the node it is connected to; null when that is this one
 * @property {boolean} ready a fan-out destination (relay-udp: while its data channel is open)
 * @property {boolean} udp its updates travel on a data channel
 * @property {boolean} batched mode `relay` (ACKs aggregated) rather than `relay-faithful`
 * @property {boolean} membershipOnly a p2p member: updates reach it by LINK only
 * @property {boolean} lagging no ACK awaited from it (mode relay's slow-consumer policy)
 * @property {boolean} closed
 * @property {Map<number, import('./session.js').PendingUpdate>} pending its updates awaiting ACKs (on its own node)
 * @property {import('./session.js').Outbox | null} dataOut its data channel's queue, on its own node
 * @property {(body: Uint8Array, entry?: import('./session.js').PendingUpdate | null) => void} push
 *   hands it a message body (a remote member's node tells it itself)
 * @property {() => import('./session.js').PendingUpdate[]} takeQueuedEntries the updates still queued for it, taken out
 * @property {(createdAt: number) => number} rtsClockAt when the RTS clock of an update fanned out to it
 *   at `createdAt` starts: NaN for a local member (stamped when its bytes are written), createdAt
 *   for a remote one (its node forwards on arrival)
 */

/** A member of a group: one of the two implementations. @typedef {import('./session.js').Session | import('./cluster.js').RemoteMember} Member */

import { ReachFlag } from '../core/protocol.js';

/**
 * How a member can be reached (docs/protocol.md §5.2): through the relay always; a p2p member
 * also peer to peer; a relay-udp member's data on its channel.
 * @param {Pick<MemberInterface, 'membershipOnly' | 'udp'>} member
 * @returns {number} ReachFlag bits
 */
export function reachOf(member) {
  return ReachFlag.RELAY | (member.membershipOnly ? ReachFlag.PEER : 0) | (member.udp ? ReachFlag.UDP : 0);
}
