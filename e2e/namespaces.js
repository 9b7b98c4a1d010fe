// What the namespace browser tests need of the machine, in one place.
import { test } from '@playwright/test';
import { namespacesForbidden } from '../lab/net/system.js';
import { turnserverMissing } from '../server/turn.js';

/**
 * Skips the running test where network namespaces are forbidden or coturn is
 * missing, and gives it the time a bench point in namespaces takes.
 */
export function needsNamespacesAndTurn() {
  const forbidden = namespacesForbidden();
  test.skip(forbidden !== null, forbidden ?? '');
  const noTurn = turnserverMissing();
  test.skip(noTurn !== null, noTurn ?? '');
  test.setTimeout(120_000);
}
