/** A chart point; `y: NaN` is a gap (chart.js does not draw a line across it). */
export interface Point {
  x: number;
  y: number;
}

/** A bucket's range at x: the band under a decimated curve; `lo: NaN` is a gap. */
export interface BandPoint {
  x: number;
  lo: number;
  hi: number;
}
