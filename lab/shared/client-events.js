// What the lab's clients (Node generators and the fleet page) measure from a
// CarClient's onEvent beside its stats: the drawn error (--playout) and the
// recovery from network events (--net-events), fed from one hook.

/**
 * The onEvent of client `k`: every event to each of the measures it has, or undefined with none.
 * @param {number} k its place among the process's clients
 * @param {{ onClientEvent: (k: number, event: string, detail: any) => void } | null} drawn
 * @param {{ onClientEvent: (event: string, detail: any) => void } | null} probe
 * @returns {((event: string, detail: any) => void) | undefined}
 */
export function measuringHook(k, drawn, probe) {
  if (!drawn && !probe) return undefined;
  return (event, detail) => {
    drawn?.onClientEvent(k, event, detail);
    probe?.onClientEvent(event, detail);
  };
}
