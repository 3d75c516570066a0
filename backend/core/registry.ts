// A named registry for pluggable parts (workflows, reward functions, losses, advantage functions,
// samplers, storages): adding one is one new file that calls `register`.
export class Registry<T> {
  private readonly items = new Map<string, T>();
  constructor(readonly kind: string) {}

  register(name: string, item: T): T {
    if (this.items.has(name)) throw new Error(`${this.kind} '${name}' is already registered`);
    this.items.set(name, item);
    return item;
  }
  get(name: string): T {
    const item = this.items.get(name);
    if (item === undefined) {
      throw new Error(`unknown ${this.kind} '${name}'; known: ${[...this.items.keys()].sort().join(', ') || '(none)'}`);
    }
    return item;
  }
  has(name: string): boolean {
    return this.items.has(name);
  }
  names(): string[] {
    return [...this.items.keys()].sort();
  }
}
