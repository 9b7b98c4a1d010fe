// The world the fuzz cases see (the system under test as the cases know it:
// its limits, keys and the well-behaved groups and peers) and the shapes of
// the cases of the four targets (fuzz-cases.js says what each target is).

import { RELAY_LIMITS } from '../../core/defaults.js';
import { BUDGET_DEFAULTS } from '../../relay/budget.js';

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
 * The world of run `seed` (the lab's defaults); `over` replaces any part of it.
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
