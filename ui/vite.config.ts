// Vite builds the single-page app into dist/, which `sextant serve` serves at /
// (api/static.c). Bundles get content hashes under assets/ (served as immutable).
// `npm run dev` proxies /api to a running Sextant (SEXTANT_URL, default :8080).
import {defineConfig} from 'vite';

export default defineConfig({
  oxc: {jsx: {runtime: 'automatic', importSource: 'preact'}},
  build: {
    target: 'es2022',
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    chunkSizeWarningLimit: 1024,
    reportCompressedSize: false,
  },
  server: {
    proxy: {'/api': {target: process.env.SEXTANT_URL ?? 'http://127.0.0.1:8080', changeOrigin: false}},
  },
});
