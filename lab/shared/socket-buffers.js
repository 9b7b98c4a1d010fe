// How much a loopback TCP connection can hold before its sender sees
// backpressure: what the tests that make a slow consumer must flood through
// before the relay can notice it.
import { readFileSync } from 'node:fs';

/** Used where /proc/sys cannot be read (not Linux). */
const FALLBACK_BYTES = 64 * 2 ** 20;

/**
 * The most a TCP socket pair on this machine can buffer one way: the sender's
 * send buffer and the receiver's receive buffer at their ceilings (Linux:
 * net.ipv4.tcp_wmem and tcp_rmem, third field), else 64 MB. A reader that
 * stopped reading still takes this much before its sender's writes back up.
 * @param {(name: string) => string} [readSysctl] reads /proc/sys/net/ipv4/NAME (replaceable for tests)
 * @returns {number} bytes
 */
export function socketBufferCeiling(readSysctl = (name) => readFileSync(`/proc/sys/net/ipv4/${name}`, 'utf8')) {
  try {
    const max = (/** @type {string} */ name) => Number(readSysctl(name).trim().split(/\s+/)[2]);
    const sum = max('tcp_wmem') + max('tcp_rmem');
    return Number.isFinite(sum) && sum > 0 ? sum : FALLBACK_BYTES;
  } catch {
    return FALLBACK_BYTES;
  }
}
