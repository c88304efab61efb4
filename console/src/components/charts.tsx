/**
 * Bar charts in plain SVG (decision 143): each a figure with an accessible name, its numbers in a
 * table beside it. The table is always in the page for screen readers; a disclosure button shows it
 * to everyone else (visually hidden until then, not display: none, which would hide it from screen
 * readers too). Shown, it is focusable, as it scrolls sideways at a narrow width and has no link to
 * reach by keyboard.
 * Colours come from the stylesheet's classes (the page's policy allows no inline style) and only
 * repeat what the legend and the table say.
 */
import type { ComponentChildren } from 'preact';
import { useId, useState } from 'preact/hooks';
import { Head } from './table.tsx';

export interface Series {
  /** the legend's and the table's word */
  name: string;
  /** a stylesheet class giving the colour (`series-completed`) */
  tone: string;
  values: number[];
}

const W = 640;
const H = 220;
const LEFT = 76;
const BOTTOM = 24;
const TOP = 8;
/** room right of the last column for its label */
const RIGHT = 16;

/** A round upper bound for an axis: 1, 2 or 5 times a power of ten, at least `max`. */
export function niceMax(max: number): number {
  if (max <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  return [1, 2, 5, 10].map((m) => m * power).find((v) => v >= max) ?? 10 * power;
}

/**
 * A chart with its heading, summary, legend and table of numbers. `table` renders the table, given
 * its tabIndex: 0 while shown (it may scroll sideways), none while hidden (no invisible focus stop).
 */
function Figure(props: { title: string; summary?: ComponentChildren; children: ComponentChildren; table: (tabIndex: 0 | undefined) => ComponentChildren; legend?: Series[] }) {
  const id = useId();
  const numbersId = useId();
  const [shown, setShown] = useState(false);
  return (
    <figure class="chart" aria-labelledby={id}>
      <h2 id={id}>{props.title}</h2>
      {props.summary && <p class="chart-summary">{props.summary}</p>}
      {props.children}
      {props.legend && props.legend.length > 1 && (
        <ul class="legend">
          {props.legend.map((s) => (
            <li key={s.name}>
              <span class={`swatch ${s.tone}`} aria-hidden="true" />
              {s.name}
            </li>
          ))}
        </ul>
      )}
      <button type="button" class="disclosure" aria-expanded={shown} aria-controls={numbersId} onClick={() => setShown((s) => !s)}>
        The numbers of “{props.title}”
      </button>
      <div id={numbersId} class={shown ? 'chart-numbers' : 'chart-numbers visually-hidden'}>
        {props.table(shown ? 0 : undefined)}
      </div>
    </figure>
  );
}

/**
 * Columns over time (`labels` name the buckets), the series stacked; `format` writes a value (the
 * axis and the table). Every `labelEvery`-th bucket is labelled under the axis with `tick(i)`.
 */
export function ColumnChart(props: {
  title: string;
  summary?: ComponentChildren;
  labels: string[];
  series: Series[];
  format?: (n: number) => string;
  tick: (i: number) => string;
  labelEvery?: number;
}) {
  const { labels, series } = props;
  const format = props.format ?? String;
  const totals = labels.map((_, i) => series.reduce((sum, s) => sum + (s.values[i] ?? 0), 0));
  const max = niceMax(Math.max(0, ...totals));
  const plotW = W - LEFT - RIGHT;
  const plotH = H - TOP - BOTTOM;
  const slot = plotW / Math.max(1, labels.length);
  const barW = Math.max(1, slot * 0.75);
  const y = (v: number) => TOP + plotH - (v / max) * plotH;
  const every = props.labelEvery ?? Math.ceil(labels.length / 8);
  // a grid line half way only where it is a value the series can have (not 2.5 orders)
  const grid = props.format || Number.isInteger(max / 2) ? [0, max / 2, max] : [0, max];
  return (
    <Figure
      title={props.title}
      summary={props.summary}
      legend={series}
      table={(tabIndex) => (
        <table aria-label={props.title} tabIndex={tabIndex}>
          <Head cols={['Period', ...series.map((s): [string, 'num'] => [s.name, 'num']), ...(series.length > 1 ? [['Total', 'num'] as [string, 'num']] : [])]} />
          <tbody>
            {labels.map((label, i) => (
              <tr key={i}>
                <th scope="row">{label}</th>
                {series.map((s) => (
                  <td class="num" key={s.name}>
                    {format(s.values[i] ?? 0)}
                  </td>
                ))}
                {series.length > 1 && <td class="num">{format(totals[i])}</td>}
              </tr>
            ))}
          </tbody>
        </table>
      )}
    >
      <svg role="img" aria-label={props.title} viewBox={`0 0 ${W} ${H}`} class="chart-svg">
        {grid.map((v) => (
          <g key={v} class="grid">
            <line x1={LEFT} x2={W} y1={y(v)} y2={y(v)} />
            <text x={LEFT - 6} y={y(v) + 4} text-anchor="end">
              {format(v)}
            </text>
          </g>
        ))}
        {labels.map((label, i) => {
          let base = 0;
          const x = LEFT + i * slot + (slot - barW) / 2;
          return (
            <g key={i}>
              <title>{`${label}: ${series.map((s) => `${format(s.values[i] ?? 0)} ${s.name.toLowerCase()}`).join(', ')}`}</title>
              {series.map((s) => {
                const v = s.values[i] ?? 0;
                if (v <= 0) return null;
                const top = y(base + v);
                const height = y(base) - top;
                base += v;
                return <rect key={s.name} class={s.tone} x={x} y={top} width={barW} height={Math.max(height, 1)} />;
              })}
              {i % every === 0 && (
                <text class="axis-label" x={x + barW / 2} y={H - 6} text-anchor="middle">
                  {props.tick(i)}
                </text>
              )}
            </g>
          );
        })}
      </svg>
    </Figure>
  );
}

/** Horizontal bars, one per named row, longest first as given; for counts by kind. */
export function BarList(props: { title: string; summary?: ComponentChildren; rows: { label: string; value: number; tone?: string }[]; unit: string; empty: string }) {
  const { rows } = props;
  const max = niceMax(Math.max(0, ...rows.map((r) => r.value)));
  const rowH = 28;
  const height = Math.max(1, rows.length) * rowH + 4;
  const labelW = 220;
  return (
    <Figure
      title={props.title}
      summary={props.summary}
      table={(tabIndex) => (
        <table aria-label={props.title} tabIndex={tabIndex}>
          <Head cols={['Name', [props.unit, 'num']]} />
          <tbody>
            {rows.map((r) => (
              <tr key={r.label}>
                <th scope="row">{r.label}</th>
                <td class="num">{r.value}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    >
      <svg role="img" aria-label={props.title} viewBox={`0 0 ${W} ${height}`} class="chart-svg">
        {rows.length === 0 && (
          <text x={8} y={20}>
            {props.empty}
          </text>
        )}
        {rows.map((r, i) => {
          const w = ((W - labelW - 48) * r.value) / max;
          return (
            <g key={r.label}>
              <title>{`${r.label}: ${r.value}`}</title>
              <text x={labelW - 8} y={i * rowH + 19} text-anchor="end">
                {r.label.length > 26 ? `${r.label.slice(0, 25)}…` : r.label}
              </text>
              <rect class={r.tone ?? 'series-plain'} x={labelW} y={i * rowH + 4} width={Math.max(w, r.value > 0 ? 2 : 0)} height={rowH - 8} />
              <text x={labelW + w + 6} y={i * rowH + 19}>
                {r.value}
              </text>
            </g>
          );
        })}
      </svg>
    </Figure>
  );
}
