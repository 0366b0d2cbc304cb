/**
 * vitest's `expect` for code running inside workerd: chai with the Jest-compatible matchers of
 * `@vitest/expect` (the package vitest builds its own expect from), so checks written for vitest
 * run unchanged in the conformance Worker.
 */
import * as chai from 'chai';
import { JestAsymmetricMatchers, JestChaiExpect, JestExtend } from '@vitest/expect';
import type { ExpectStatic } from 'vitest';

chai.use(JestExtend);
chai.use(JestChaiExpect);
chai.use(JestAsymmetricMatchers);

export const expect = chai.expect as unknown as ExpectStatic;
