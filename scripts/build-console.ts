/**
 * `npm ci` / `npm install` (postinstall) and `npm run build:console`: bundles the console
 * (console/src: Preact and the project's typed client) with esbuild into build/console —
 * index.html and assets/console-<hash>.js and .css, each asset also compressed (.br, .gz) so the
 * service sends the compressed copy without compressing on every request.
 *
 * esbuild and Preact are dev dependencies. Installed without them (`npm ci --omit=dev`), this says
 * so and exits 0: the service starts, and /console answers 503 with how to build it
 * (docs/decisions/141-console.md).
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import zlib from 'node:zlib';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const CONSOLE_OUT = path.join(root, 'build', 'console');
const SOURCE = path.join(root, 'console');

export interface ConsoleBuild {
  dir: string;
  /** the files of the page's first load, by their path under `dir` */
  assets: string[];
}

/** `text` with each `{{name}}` replaced by `values[name]`. */
function fill(text: string, values: Record<string, string>): string {
  return text.replace(/\{\{(\w+)\}\}/g, (_, name: string) => {
    if (!(name in values)) throw new Error(`console/index.html: no value for {{${name}}}`);
    return values[name];
  });
}

async function compressBeside(file: string): Promise<void> {
  const data = await fs.readFile(file);
  const brotli = zlib.brotliCompressSync(data, {
    params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: data.length },
  });
  await fs.writeFile(`${file}.br`, brotli);
  await fs.writeFile(`${file}.gz`, zlib.gzipSync(data, { level: 9 }));
}

/**
 * Builds the console into `outDir` (default build/console). It is written beside and then moved
 * into place, so a service reading `outDir` never sees half a build.
 */
export async function buildConsole(outDir = CONSOLE_OUT): Promise<ConsoleBuild> {
  const esbuild = await import('esbuild');
  const staging = `${outDir}.${process.pid}.tmp`;
  await fs.rm(staging, { recursive: true, force: true });
  const result = await esbuild.build({
    entryPoints: { console: path.join(SOURCE, 'src', 'main.tsx') },
    bundle: true,
    format: 'esm',
    target: 'es2022',
    platform: 'browser',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    minify: true,
    legalComments: 'none',
    entryNames: '[name]-[hash]',
    outdir: path.join(staging, 'assets'),
    metafile: true,
    logLevel: 'warning',
    tsconfig: path.join(SOURCE, 'tsconfig.json'),
  });
  const outputs = Object.keys(result.metafile.outputs).map((f) => path.relative(staging, path.resolve(f)));
  const script = outputs.find((f) => f.endsWith('.js'));
  const style = outputs.find((f) => f.endsWith('.css'));
  if (!script || !style) throw new Error(`console build: expected a script and a stylesheet, got ${outputs.join(', ')}`);
  const template = await fs.readFile(path.join(SOURCE, 'index.html'), 'utf8');
  await fs.writeFile(path.join(staging, 'index.html'), fill(template, { script: `/console/${script}`, style: `/console/${style}` }));
  for (const file of ['index.html', script, style]) await compressBeside(path.join(staging, file));
  await fs.rm(outDir, { recursive: true, force: true });
  await fs.rename(staging, outDir);
  return { dir: outDir, assets: ['index.html', script, style] };
}

/** Whether esbuild can be loaded (it is a dev dependency). */
async function haveEsbuild(): Promise<boolean> {
  try {
    await import('esbuild');
    return true;
  } catch {
    return false;
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  if (!(await haveEsbuild())) {
    console.warn('console not built (esbuild is a dev dependency and is not installed): /console answers 503 until `npm ci` with dev dependencies');
    process.exit(0);
  }
  const built = await buildConsole();
  const sizes = await Promise.all(built.assets.map(async (f) => (await fs.stat(path.join(built.dir, `${f}.br`))).size));
  console.log(`console built: ${path.relative(root, built.dir)} (first load ${sizes.reduce((a, b) => a + b, 0)} bytes with brotli)`);
}
