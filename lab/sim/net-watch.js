// The Node clients' stand-in for a phone's network-change signal: a phone's
// OS says when it joined a network (the browser's `online` event, Android's
// connectivity callbacks); here one timer per process looks at the machine's
// addresses and announces `online` when an address appears that was not there
// before, as after a handover (--net-events). The relay transports rejoin at
// once on it (web/src/transport/relay-connection.js), as they do in a browser.

import { networkInterfaces } from 'node:os';

/** How often the addresses are looked at. */
export const NET_WATCH_MS = 250;

/** The machine's non-loopback IPv4 addresses now. */
function addresses() {
  const out = new Set();
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) out.add(a.address);
  }
  return out;
}

/**
 * An EventTarget-shaped watch for `online` (what RelayConnectionOptions.network takes).
 * @param {{ intervalMs?: number, read?: () => Set<string> }} [o] `read`: the addresses (tests)
 */
export function createNetWatch(o = {}) {
  const read = o.read ?? addresses;
  /** @type {Set<() => void>} */
  const listeners = new Set();
  let known = read();
  /** @type {ReturnType<typeof setInterval> | null} */
  let timer = null;
  const look = () => {
    const now = read();
    const fresh = [...now].some((a) => !known.has(a));
    known = now;
    if (fresh) for (const f of [...listeners]) f();
  };
  return {
    /** @param {'online'} _type @param {() => void} f */
    addEventListener(_type, f) {
      listeners.add(f);
      if (timer === null) {
        timer = setInterval(look, o.intervalMs ?? NET_WATCH_MS);
        timer.unref?.();
      }
    },
    /** @param {'online'} _type @param {() => void} f */
    removeEventListener(_type, f) {
      listeners.delete(f);
      if (listeners.size === 0 && timer !== null) { clearInterval(timer); timer = null; }
    },
    /** Looks now (tests). */
    look,
  };
}
