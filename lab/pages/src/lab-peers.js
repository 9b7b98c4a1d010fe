// The PeerJS peers the lab page (lab.js) holds, by id, with their
// connections: looking one up, and counting the open ones.

/** @typedef {import('./lab-conn.js').LabPeer} LabPeer */

/** The peers of this page by id. @type {Map<string, LabPeer>} */
export const peers = new Map();

/** The peer with that id, or an error. @param {string} id */
export function peerOf(id) {
  const rec = peers.get(id);
  if (!rec) throw new Error(`no peer ${id} in this page`);
  return rec;
}

/** A peer's connection by key, or an error. @param {LabPeer} rec @param {string} key */
export function connOf(rec, key) {
  const c = rec.conns.get(key);
  if (!c) throw new Error(`peer ${rec.id} has no connection ${key}`);
  return c;
}

/** A peer's connections without error whose channels are all open. @param {LabPeer} rec */
export function openCount(rec) {
  let n = 0;
  for (const c of rec.conns.values()) if (!c.error && c.channels.every((ch) => ch.readyState === 'open')) n++;
  return n;
}
