export interface ChartSeries {
  name: string
  values: number[]
  /** a CSS class giving the series its colour and dash (series-1 … series-3) */
  className: string
}

const W = 600
const H = 180
const PAD = { left: 64, right: 12, top: 16, bottom: 36 }

const fmt = (n: number): string => (n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2).replace(/\.?0+$/, '') || '0')
const timeOf = (iso: string): string => new Date(iso).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })

/**
 * A line (or bar) chart drawn as SVG from one series per line, with its numbers in a table below
 * for screen readers and for reading exact values.
 */
export function Chart({ title, unit, times, series, bars = false }: { title: string; unit: string; times: string[]; series: ChartSeries[]; bars?: boolean }) {
  const n = times.length
  const max = Math.max(0, ...series.flatMap((s) => s.values))
  const top = max === 0 ? 1 : max * 1.1
  const x = (i: number): number => PAD.left + (n <= 1 ? 0 : (i * (W - PAD.left - PAD.right)) / (n - 1))
  const y = (v: number): number => PAD.top + (H - PAD.top - PAD.bottom) * (1 - v / top)
  const slot = (W - PAD.left - PAD.right) / Math.max(1, n)
  const summary = series.map((s) => `${s.name}: highest ${fmt(Math.max(0, ...s.values))} ${unit}`).join('; ')
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`${title} over the window. ${summary}`}>
        <line class="axis" x1={PAD.left} y1={y(0)} x2={W - PAD.right} y2={y(0)} />
        <line class="grid" x1={PAD.left} y1={y(top / 1.1)} x2={W - PAD.right} y2={y(top / 1.1)} />
        <text class="tick" x={PAD.left - 6} y={y(0) + 4} text-anchor="end">0</text>
        <text class="tick" x={PAD.left - 6} y={y(top / 1.1) + 4} text-anchor="end">{fmt(max === 0 ? 1 : max)}</text>
        {n > 0 && <text class="tick" x={PAD.left} y={H - 8}>{timeOf(times[0]!)}</text>}
        {n > 1 && <text class="tick" x={W - PAD.right} y={H - 8} text-anchor="end">{timeOf(times[n - 1]!)}</text>}
        {series.map((s) => bars
          ? s.values.map((v, i) => <rect key={`${s.name}${i}`} class={s.className} x={PAD.left + i * slot + slot * 0.15} y={y(v)} width={slot * 0.7} height={Math.max(0, y(0) - y(v))} />)
          : <polyline key={s.name} class={s.className} fill="none" points={s.values.map((v, i) => `${x(i)},${y(v)}`).join(' ')} />)}
      </svg>
      <ul class="legend">
        {series.map((s) => <li key={s.name}><span class={`swatch ${s.className}`} aria-hidden="true" />{s.name}</li>)}
      </ul>
      <details>
        <summary>{title}: numbers</summary>
        <div class="table-wrap">
          <table>
            <thead><tr><th scope="col">Bucket start</th>{series.map((s) => <th scope="col" key={s.name}>{s.name} ({unit})</th>)}</tr></thead>
            <tbody>
              {times.map((t, i) => (
                <tr key={t}><td>{new Date(t).toLocaleString()}</td>{series.map((s) => <td key={s.name}>{fmt(s.values[i] ?? 0)}</td>)}</tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  )
}
