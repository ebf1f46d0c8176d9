/**
 * The workspace's files for the composer's `@` completion: listed once with `findFiles` (gitignore-like
 * excludes, up to 200k), kept current by a file watcher, matched with `fuzzyFilter` per keystroke.
 */
import * as vscode from 'vscode';
import { fuzzyFilter, type PathEntry, withFolders } from './fuzzy';

const EXCLUDE = '**/{node_modules,.git,.venv,__pycache__,dist,out,.e2e-cache}/**';
const MAX_FILES = 200_000;

export class FileIndex implements vscode.Disposable {
  private entries: PathEntry[] | undefined;
  private loading: Promise<PathEntry[]> | undefined;
  private readonly uris = new Map<string, string>();
  private watcher: vscode.FileSystemWatcher | undefined;

  private load(): Promise<PathEntry[]> {
    if (this.entries) return Promise.resolve(this.entries);
    if (!this.loading) {
      if (!this.watcher) {
        this.watcher = vscode.workspace.createFileSystemWatcher('**/*', false, true, false);
        const reset = (): void => {
          this.entries = undefined;
          this.loading = undefined;
        };
        this.watcher.onDidCreate(reset);
        this.watcher.onDidDelete(reset);
      }
      this.loading = Promise.resolve(vscode.workspace.findFiles('**/*', EXCLUDE, MAX_FILES)).then((found) => {
        this.uris.clear();
        const paths = found.map((u) => {
          const rel = vscode.workspace.asRelativePath(u, false);
          this.uris.set(rel, u.toString());
          return rel;
        });
        this.entries = withFolders(paths);
        return this.entries;
      });
    }
    return this.loading;
  }

  async find(query: string): Promise<{ path: string; isFolder: boolean; uri?: string }[]> {
    const entries = await this.load();
    return fuzzyFilter(query, entries, 30).map((e) => ({ path: e.path, isFolder: e.isFolder, ...(this.uris.has(e.path) ? { uri: this.uris.get(e.path) } : {}) }));
  }

  dispose(): void {
    this.watcher?.dispose();
  }
}
