// relay-udp's view of the group. The relay announces a member once that
// member's channel is open; the client core learns of them only while our own
// channel is open too (live), so no update is ever counted as sent to a
// receiver that could not get it.

/**
 * @typedef {import('../../../../core/client.js').TransportHandlers} TransportHandlers
 * @typedef {import('../../../../core/protocol.js').WelcomeMsg} WelcomeMsg
 */

/**
 * The group members the relay announced, and whether the core sees them.
 */
export class UdpMembers {
  constructor() {
    /** @type {Map<number, string>} members the relay announced (their channels are open), id -> name */
    this.members = new Map();
    /** @type {null | Array<() => void>} membership events that came before the WELCOME was taken in */
    this.early = [];
    this.myId = 0;
    /** The client core knows the members: our channel is open. */
    this.live = false;
    /** @type {TransportHandlers | null} */
    this.handlers = null;
  }

  /**
   * The relay announced a member (held back until the WELCOME is taken in).
   * @param {number} id
   * @param {string} name
   */
  announced(id, name) {
    if (this.early) this.early.push(() => this.joined(id, name));
    else this.joined(id, name);
  }

  /**
   * The relay said a member left (held back until the WELCOME is taken in).
   * @param {number} id
   */
  departed(id) {
    if (this.early) this.early.push(() => this.left(id));
    else this.left(id);
  }

  /**
   * Takes in the WELCOME: our id, the members already there, then the events held back.
   * @param {WelcomeMsg} welcome
   */
  welcome(welcome) {
    this.myId = welcome.clientId;
    for (const m of welcome.members) if (m.id !== this.myId) this.members.set(m.id, m.name);
    const replay = this.early ?? [];
    this.early = null;
    for (const f of replay) f();
  }

  /**
   * Takes in the WELCOME of a rejoin: the members the relay lists now
   * replace those known (the core re-learns them from welcomeForCore).
   * @param {WelcomeMsg} welcome
   */
  rejoined(welcome) {
    this.myId = welcome.clientId;
    this.members = new Map(welcome.members.filter((m) => m.id !== this.myId).map((m) => [m.id, m.name]));
  }

  /**
   * @param {number} id
   * @param {string} name
   */
  joined(id, name) {
    if (id === this.myId || this.members.has(id)) return;
    this.members.set(id, name);
    if (this.live) this.handlers?.onMemberJoined({ id, name });
  }

  /** @param {number} id */
  left(id) {
    if (!this.members.delete(id)) return;
    if (this.live) this.handlers?.onMemberLeft(id);
  }

  /**
   * Our channel opened: the core may reach the members from now on.
   * @param {boolean} announce tell the core of each member (it already knows them from
   *   connect() otherwise)
   */
  goLive(announce) {
    this.live = true;
    if (announce) for (const [id, name] of this.members) this.handlers?.onMemberJoined({ id, name });
  }

  /** Our channel went away: nobody can be reached, the core stops counting updates as sent to them. */
  goDown() {
    this.live = false;
    for (const id of this.members.keys()) this.handlers?.onMemberLeft(id);
  }

  /**
   * The WELCOME the core gets: the members whose channels are open, and us.
   * @param {WelcomeMsg} welcome the relay's
   * @param {boolean} [reachable] false: our own channel is not open yet, so only us
   * @returns {WelcomeMsg}
   */
  welcomeForCore(welcome, reachable = true) {
    const me = { id: this.myId, name: welcome.members.find((x) => x.id === this.myId)?.name ?? '' };
    const others = reachable ? [...this.members].map(([id, name]) => ({ id, name })) : [];
    return { ...welcome, members: [...others, me] };
  }
}
