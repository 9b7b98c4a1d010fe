/**
 * `node --import ./scripts/import-trace.js ...` appends the URL of every
 * module the process loads to the file named by CARLAB_IMPORT_TRACE, one per
 * line: scripts/layout.test.js uses it to prove what `carlab start` imports by
 * watching the process, not by reading its source.
 *
 * @module scripts/import-trace
 */

import { register } from 'node:module';

if (process.env.CARLAB_IMPORT_TRACE) {
  const hooks = `
    import { appendFileSync } from 'node:fs';
    export async function resolve(specifier, context, next) {
      const result = await next(specifier, context);
      appendFileSync(${JSON.stringify(process.env.CARLAB_IMPORT_TRACE)}, result.url + '\\n');
      return result;
    }`;
  register(`data:text/javascript,${encodeURIComponent(hooks)}`);
}
