import { defineConfig } from 'vite';

// Preact through esbuild's automatic JSX runtime: no Babel, no extra plugin.
// `pnpm --filter @cards/web dev` proxies /api to a running gateway (PORT 8090 by default).
export default defineConfig({
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: { outDir: 'dist', target: 'es2020', sourcemap: false },
  server: { proxy: { '/api': `http://127.0.0.1:${process.env.GATEWAY_PORT ?? '8090'}` } },
});
