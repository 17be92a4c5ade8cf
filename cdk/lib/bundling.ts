/**
 * Assets built with plain file copies at synth time (ILocalBundling), so no Docker engine is ever
 * needed: the agent bundle (target-fleet.ts) and the Lambda code (lambdas.ts).
 */
import * as fs from 'fs';
import * as path from 'path';
import { AssetHashType, BundlingOptions, DockerImage, ILocalBundling } from 'aws-cdk-lib';

/** Never shipped anywhere: interpreter and tool caches, editor droppings, packaging metadata. */
const SKIP_NAMES = new Set(['__pycache__', '.pytest_cache', '.mypy_cache', '.ruff_cache', '.hypothesis', '.DS_Store']);

function skippedName(name: string): boolean {
  return SKIP_NAMES.has(name) || name.endsWith('.pyc') || name.endsWith('.egg-info');
}

/**
 * Copy `from` into `to` recursively. `exclude` gets each entry's path relative to `from` (POSIX
 * separators) and skips it (and, for a folder, everything under it) when it returns true.
 */
export function copyTree(from: string, to: string, exclude: (relPath: string) => boolean = () => false): void {
  const walk = (dir: string, rel: string): void => {
    fs.mkdirSync(path.join(to, rel), { recursive: true });
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const entryRel = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (skippedName(entry.name) || exclude(entryRel)) continue;
      const src = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(src, entryRel);
      else if (entry.isFile()) fs.copyFileSync(src, path.join(to, entryRel));
    }
  };
  walk(from, '');
}

/** A local bundler that runs a copy function into the asset's output folder; it always succeeds. */
export class FileCopyBundler implements ILocalBundling {
  constructor(private readonly copy: (outputDir: string) => void) {}

  public tryBundle(outputDir: string): boolean {
    this.copy(outputDir);
    return true;
  }
}

/**
 * Asset options for a folder built by `copy`: the hash is over what is shipped (the output), not the
 * source folder alone, and the Docker image is a placeholder that is never pulled because the local
 * bundler always succeeds.
 */
export function fileCopyAsset(copy: (outputDir: string) => void): {
  assetHashType: AssetHashType;
  bundling: BundlingOptions;
} {
  return {
    assetHashType: AssetHashType.OUTPUT,
    bundling: {
      image: DockerImage.fromRegistry('benchfleet-local-bundling-only'),
      local: new FileCopyBundler(copy),
    },
  };
}
