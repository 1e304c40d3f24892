// The time series chart (uPlot), in a module of its own so that only the pages that draw a chart load
// uPlot.
import { html, useEffect, useRef, useState } from './preact-htm.js';
import uPlot from 'uplot';

const INTEGER_STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 2e6, 5e6, 1e7, 1e8, 1e9];

function cssVar(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';
}

/**
 * A time series chart (uPlot): `times` in seconds, `series` [{ label, values, color, scale }]. Resizes
 * with its box. With `onSelect(fromSeconds, toSeconds)`, dragging across it selects a span of time.
 */
export function TimeChart({ times, series, height = 220, label, onSelect }) {
  const box = useRef(null);
  const selected = useRef(onSelect);
  selected.current = onSelect;
  const selectable = Boolean(onSelect);
  // Colours come from the theme's CSS variables: drawn again when the system switches light and dark.
  const [dark, setDark] = useState(() => matchMedia('(prefers-color-scheme: dark)').matches);
  useEffect(() => {
    const query = matchMedia('(prefers-color-scheme: dark)');
    const changed = () => setDark(query.matches);
    query.addEventListener('change', changed);
    return () => query.removeEventListener('change', changed);
  }, []);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const scales = [...new Set(series.map((s) => s.scale ?? 'y'))];
    const opts = {
      width: el.clientWidth || 600,
      // Counts never go below zero, and a quiet day still shows a 0..4 scale rather than 0..1.
      scales: { x: { time: true }, ...Object.fromEntries(series.filter((s) => s.integer).map((s) => [s.scale ?? 'y', { range: (_u, _min, max) => [0, Math.max(4, max)] }])) },
      height,
      axes: [
        { stroke: cssVar('--muted'), grid: { stroke: cssVar('--grid') }, ticks: { stroke: cssVar('--grid') } },
        ...scales.map((scale, i) => ({
          scale,
          side: i === 0 ? 3 : 1,
          stroke: cssVar('--muted'),
          grid: { show: i === 0, stroke: cssVar('--grid') },
          ticks: { stroke: cssVar('--grid') },
          size: 76,
          // Counts step by whole numbers: no "0, 0, 1, 1" ticks on a quiet day.
          ...(series.find((s) => (s.scale ?? 'y') === scale)?.integer ? { incrs: INTEGER_STEPS } : {}),
          values: (_u, splits) => splits.map((v) => (series.find((s) => (s.scale ?? 'y') === scale)?.format ?? String)(v)),
        })),
      ],
      series: [{}, ...series.map((s) => ({ label: s.label, stroke: cssVar(s.color), width: 2, scale: s.scale ?? 'y', value: (_u, v) => (v === null ? '–' : (s.format ?? String)(v)) }))],
      legend: { show: true },
      cursor: { drag: { x: selectable, y: false, setScale: false } },
      hooks: selectable
        ? {
            setSelect: [
              (u) => {
                if (u.select.width < 2) return;
                const from = u.posToVal(u.select.left, 'x');
                const to = u.posToVal(u.select.left + u.select.width, 'x');
                u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
                selected.current?.(from, to);
              },
            ],
          }
        : {},
    };
    const chart = new uPlot(opts, [times, ...series.map((s) => s.values)], el);
    const resize = new ResizeObserver(() => chart.setSize({ width: el.clientWidth, height }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      chart.destroy();
    };
  }, [times, series, height, selectable, dark]);
  return html`<div class="chart" ref=${box} role="img" aria-label=${label}></div>`;
}
