// A named registry for pluggable parts (workflows, reward functions, losses, advantage functions,
// samplers, storages, CLI commands). The built-ins are an explicit, typed map handed to the
// constructor by the family's registry module, which imports each part: adding one is one new file
// plus one entry in that map, and a missing part is a compile error, not a runtime "unknown ...".
// No part registers itself on import. `register` is for parts the user supplies at run time
// (workflow.file / reward code from the workspace).
export class Registry<T> {
  private readonly items = new Map<string, T>();
  constructor(
    readonly kind: string,
    builtins: Readonly<Record<string, T>> = {},
  ) {
    for (const [name, item] of Object.entries(builtins)) this.register(name, item);
  }

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
