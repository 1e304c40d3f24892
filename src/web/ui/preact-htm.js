// preact and htm from their packages (bundled by scripts/build-web.mjs): html`` templates instead of
// JSX, so the sources run without a compile step of their own.
export { render } from 'preact';
export { html } from 'htm/preact';
export { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
