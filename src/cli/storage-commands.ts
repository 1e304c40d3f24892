// Admin commands of the stored bytes: scrub them against their digests now, and list what a scrub or a
// read found corrupt. (The metadata store's own commands are metadata-commands.ts.)
import { FailedResult, iso, type Command } from './command.js';

export const STORAGE_GROUPS: Readonly<Record<string, { section: string; summary: string }>> = {
  scrub: { section: 'Storage', summary: 're-read stored bytes against their digests; list what was found corrupt' },
};

export const STORAGE_COMMANDS = {
  scrub: {
    run: {
      args: [],
      flags: [],
      summary: 're-read every stored blob now, at full speed, and check it against the digest recorded at write time (exit status 1 when anything is corrupt or missing)',
      example: 's3edge scrub run --json',
      run: async ({ config, repos }) => {
        // The one command that reads blobs loads the storage backends (the upstream client's imports
        // alone are a fifth of a second): every other command starts without them.
        const [{ createStorage }, { scrubBlobs }, { CorruptionReporter }] = await Promise.all([
          import('../storage/select.js'),
          import('../storage/scrub.js'),
          import('../storage/corruption.js'),
        ]);
        // No init(): it would clear a running server's uploads in flight.
        const storage = await createStorage(config);
        try {
          // What it finds is marked for `scrub list` and reported here; the log stays quiet.
          const quiet = { warn: () => undefined };
          const corruption = new CorruptionReporter(repos.integrity, quiet, () => new Date());
          const run = await scrubBlobs({ storage, integrity: repos.integrity, blobRefs: repos.blobRefs, objects: repos.objects, corruption, log: quiet }, { bytesPerSecond: 0 });
          const result = {
            checked: run.checked,
            bytes: run.bytes,
            corrupt: run.corrupt.length,
            missing: run.missing.length,
            corruptBlobs: run.corrupt.map((c) => c.owner).join(', '),
            missingBlobs: run.missing.join(', '),
          };
          // Damage found: printed like any result, and exit status 1 for scripts (as fsck does).
          return run.corrupt.length + run.missing.length > 0 ? new FailedResult(result) : result;
        } finally {
          await storage.close();
        }
      },
    },
    list: {
      args: [],
      flags: [],
      summary: 'list the blobs a scrub or a read found corrupt (until they check out again or their object is rewritten)',
      example: 's3edge scrub list',
      run: async ({ repos }) =>
        (await repos.integrity.corrupt()).map((c) => ({ owner: c.owner, expected: c.expected, actual: c.actual, foundBy: c.foundBy, detectedAt: iso(c.detectedAt) })),
    },
  },
} satisfies Record<string, Record<string, Command>>;
