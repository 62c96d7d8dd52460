import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface Series {
  label: string;
  values: number[];
  color: string;
}

/** A uPlot line chart of buckets over time, sized to its container (phones included). */
/** `range`: the span the API answered for, in ms, so one bucket still gets a sensible time axis. */
export function Chart({ title, times, series, range }: { title: string; times: number[]; series: Series[]; range: [number, number] }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = box.current;
    if (!element) return;
    const plot = new uPlot(
      {
        width: Math.max(280, element.clientWidth),
        height: 220,
        scales: { x: { time: true, range: () => [range[0] / 1000, range[1] / 1000] } },
        series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.color, width: 2, fill: `${s.color}22` }))],
        axes: [{}, { size: 50 }],
      },
      [times.map((t) => t / 1000), ...series.map((s) => s.values)],
      element,
    );
    // Follows its box (a grid cell), not the window: the two charts share a row on wide screens.
    const observer = new ResizeObserver(() => plot.setSize({ width: Math.max(280, element.clientWidth), height: 220 }));
    observer.observe(element);
    return () => {
      observer.disconnect();
      plot.destroy();
    };
  }, [times, series, range]);
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      <div ref={box} class="chart-box" role="img" aria-label={`${title}: ${series.map((s) => `${s.label} total ${s.values.reduce((a, b) => a + b, 0)}`).join(', ')}`} />
    </figure>
  );
}
