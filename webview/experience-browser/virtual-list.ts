// A virtualised list: only the rows in view (plus a small overscan) exist in the DOM, rows are
// fetched a page at a time and cached, so 100,000 experiences scroll as smoothly as 100.
export interface Range {
  start: number;
  end: number;
}

export function visibleRange(
  scrollTop: number,
  viewport: number,
  rowHeight: number,
  total: number,
  overscan = 8,
): Range {
  if (total <= 0 || rowHeight <= 0) return { start: 0, end: 0 };
  const first = Math.floor(Math.max(0, scrollTop) / rowHeight);
  const count = Math.ceil(Math.max(0, viewport) / rowHeight) + 1;
  return { start: Math.max(0, first - overscan), end: Math.min(total, first + count + overscan) };
}

export type FetchPage<T> = (offset: number, limit: number) => Promise<{ total: number; rows: T[] }>;

/** Rows by index, loaded a page at a time; a generation counter drops answers to stale queries. */
export class PageCache<T> {
  total = 0;
  private readonly pages = new Map<number, T[]>();
  private readonly loading = new Map<number, Promise<void>>();
  private generation = 0;
  onLoaded: () => void = () => undefined;
  onError: (err: Error) => void = () => undefined;

  constructor(
    private fetchPage: FetchPage<T>,
    readonly pageSize = 200,
  ) {}

  get(i: number): T | undefined {
    const page = Math.floor(i / this.pageSize);
    const rows = this.pages.get(page);
    if (rows) return rows[i - page * this.pageSize];
    this.load(page);
    return undefined;
  }

  load(page: number): Promise<void> {
    const existing = this.loading.get(page);
    if (existing) return existing;
    const gen = this.generation;
    const p = this.fetchPage(page * this.pageSize, this.pageSize).then(
      (r) => {
        if (gen !== this.generation) return;
        this.pages.set(page, r.rows);
        this.total = r.total;
        this.loading.delete(page);
        this.onLoaded();
      },
      (err: Error) => {
        if (gen === this.generation) this.loading.delete(page);
        this.onError(err);
      },
    );
    this.loading.set(page, p);
    return p;
  }

  /** Forget everything (filter changed, buffer changed); optionally with a new fetcher. */
  reset(fetchPage?: FetchPage<T>): void {
    if (fetchPage) this.fetchPage = fetchPage;
    this.generation++;
    this.pages.clear();
    this.loading.clear();
    // Nothing of the old query may stay drawn (or clickable) until the new one answers.
    this.total = 0;
  }

  /**
   * Same query, newer rows (a run appends every second or so): the pages in view are fetched again
   * and stay drawn until their fresh copies answer, so the list neither blanks nor jumps back to the
   * top; other pages are dropped (their rows have moved) and fetched when scrolled to.
   */
  refresh(pages: number[]): Promise<void> {
    this.generation++;
    this.loading.clear();
    for (const p of [...this.pages.keys()]) if (!pages.includes(p)) this.pages.delete(p);
    return Promise.all(pages.map((p) => this.load(p))).then(() => undefined);
  }

  get loadedPages(): number {
    return this.pages.size;
  }
}

export interface VirtualListOptions<T> {
  rowHeight: number;
  /** Fills a (reused) row element for item `row` at `index`; `row` is undefined while loading. */
  renderRow(el: HTMLElement, row: T | undefined, index: number): void;
  overscan?: number;
}

export class VirtualList<T> {
  readonly spacer: HTMLElement;
  private readonly pool: HTMLElement[] = [];
  private frame = 0;
  rendered: Range = { start: 0, end: 0 };

  constructor(
    readonly viewport: HTMLElement,
    readonly cache: PageCache<T>,
    private readonly o: VirtualListOptions<T>,
  ) {
    const doc = viewport.ownerDocument;
    this.spacer = doc.createElement('div');
    this.spacer.className = 'vlist-spacer';
    viewport.appendChild(this.spacer);
    viewport.addEventListener('scroll', () => this.schedule());
    cache.onLoaded = () => this.schedule();
  }

  schedule(): void {
    if (this.frame) return;
    const raf =
      this.viewport.ownerDocument.defaultView?.requestAnimationFrame ??
      ((f: FrameRequestCallback) => setTimeout(() => f(0), 0) as unknown as number);
    this.frame = raf(() => {
      this.frame = 0;
      this.render();
    });
  }

  /** Draws the rows in view now; returns how many row elements exist in the DOM. */
  render(): number {
    const h = this.o.rowHeight;
    this.spacer.style.height = `${this.cache.total * h}px`;
    const r = visibleRange(
      this.viewport.scrollTop,
      this.viewport.clientHeight || 600,
      h,
      this.cache.total,
      this.o.overscan,
    );
    const need = r.end - r.start;
    while (this.pool.length < need) {
      const el = this.viewport.ownerDocument.createElement('div');
      el.className = 'vlist-row';
      el.style.height = `${h}px`;
      this.spacer.appendChild(el);
      this.pool.push(el);
    }
    // Rows beyond what is in view are removed, not hidden: a `hidden` row could be shown again by
    // the row's own `display` rule, and only rows that match the query may exist.
    while (this.pool.length > need) this.pool.pop()!.remove();
    for (let k = 0; k < need; k++) {
      const el = this.pool[k]!;
      const i = r.start + k;
      el.style.transform = `translateY(${i * h}px)`;
      el.dataset.index = String(i);
      this.o.renderRow(el, this.cache.get(i), i);
    }
    this.rendered = r;
    return need;
  }

  /** The cache pages of the rows drawn now (page 0 when none is). */
  visiblePages(): number[] {
    const ps = this.cache.pageSize;
    const { start, end } = this.rendered;
    if (end <= start) return [0];
    const out: number[] = [];
    for (let p = Math.floor(start / ps); p <= Math.floor((end - 1) / ps); p++) out.push(p);
    return out;
  }

  scrollToIndex(i: number): void {
    this.viewport.scrollTop = i * this.o.rowHeight;
    this.render();
  }
}
