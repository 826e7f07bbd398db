import { realpathSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { ErrorCode, McpReconcilerError } from '../errors.js';
import type { FormatName } from './formats.js';
import type { ConfigSource } from './sources.js';

/** What a preset needs to place its files. */
export interface PresetContext {
  /** Absolute workspace root. */
  root: string;
  /** The user's home directory. */
  home: string;
  /** For `XDG_CONFIG_HOME`, `APPDATA` and `CODEX_HOME`; defaults to `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Where per-user application files live differs by OS; default `process.platform`. */
  platform?: NodeJS.Platform;
}

/** A ready list of sources for one host's file layout (SPEC §8.3). */
export interface Preset {
  name: string;
  description: string;
  /** How the host reads its files; also used for `--config` files given with this preset. Default `default`. */
  format?: FormatName;
  sources(ctx: PresetContext): ConfigSource[];
}

/** `$XDG_CONFIG_HOME` when it is absolute (the XDG rule), else `~/.config`. */
export function configHome(ctx: PresetContext): string {
  const xdg = (ctx.env ?? process.env).XDG_CONFIG_HOME;
  return xdg && isAbsolute(xdg) ? xdg : join(ctx.home, '.config');
}

/**
 * Electron's per-user application folder, where VS Code, its extensions and
 * Claude Desktop keep their files: `~/Library/Application Support` on macOS,
 * `%APPDATA%` on Windows, `$XDG_CONFIG_HOME` (or `~/.config`) elsewhere.
 */
export function appDataHome(ctx: PresetContext): string {
  const platform = ctx.platform ?? process.platform;
  if (platform === 'darwin') return join(ctx.home, 'Library', 'Application Support');
  if (platform === 'win32') return (ctx.env ?? process.env).APPDATA ?? join(ctx.home, 'AppData', 'Roaming');
  return configHome(ctx);
}

/**
 * The workspace root as Claude Code keys it in `~/.claude.json`: the real
 * path (it starts from the process's working directory, which has its
 * symlinks resolved). A root that does not exist keeps its path.
 */
export function realRoot(root: string): string {
  try {
    return realpathSync(root);
  } catch {
    return root;
  }
}

/** VS Code's extension storage folder of extension `id`. */
function vscodeExtensionStorage(ctx: PresetContext, id: string): string {
  return join(appDataHome(ctx), 'Code', 'User', 'globalStorage', id, 'settings');
}

function list(ctx: PresetContext, format: FormatName, items: Omit<ConfigSource, 'root' | 'format'>[]): ConfigSource[] {
  return items.map((s) => ({ ...s, root: ctx.root, ...(format === 'default' ? {} : { format }) }));
}

/** Dot-folder layout shared by Gemini CLI and Qwen Code. */
function geminiStyle(name: 'gemini' | 'qwen', dir: string, host: string): Preset {
  return {
    name,
    format: name,
    description: `${host}: ~/${dir}/settings.json (user), <root>/${dir}/settings.json (workspace), with mcp.allowed / mcp.excluded`,
    sources: (ctx) =>
      list(ctx, name, [
        { scope: 'user', path: join(ctx.home, dir, 'settings.json') },
        { scope: 'workspace', path: join(ctx.root, dir, 'settings.json') },
      ]),
  };
}

/** The built-in presets by name. */
export const presets: Readonly<Record<string, Preset>> = Object.freeze({
  default: {
    name: 'default',
    description:
      "mcp-reconciler's own layout: ~/.config/mcp-reconciler/settings.json (user), <root>/.mcp.json (project), <root>/.mcp-reconciler/settings.json and mcp.servers.yml (workspace)",
    sources: (ctx) =>
      list(ctx, 'default', [
        { scope: 'user', path: join(configHome(ctx), 'mcp-reconciler', 'settings.json') },
        { scope: 'project', path: join(ctx.root, '.mcp.json') },
        { scope: 'workspace', path: join(ctx.root, '.mcp-reconciler', 'settings.json') },
        { scope: 'workspace', path: join(ctx.root, '.mcp-reconciler', 'mcp.servers.yml') },
      ]),
  },
  'claude-code': {
    name: 'claude-code',
    format: 'claude-code',
    description: 'Claude Code: ~/.claude.json (user), <root>/.mcp.json (project), projects[<root>] in ~/.claude.json (local; wins over both)',
    sources: (ctx) =>
      list(ctx, 'claude-code', [
        { scope: 'user', path: join(ctx.home, '.claude.json') },
        { scope: 'project', path: join(ctx.root, '.mcp.json') },
        // `claude mcp add` writes here by default: the user's own entries for this folder, keyed by its real path.
        { scope: 'local', path: join(ctx.home, '.claude.json'), at: ['projects', realRoot(ctx.root)] },
      ]),
  },
  'claude-desktop': {
    name: 'claude-desktop',
    format: 'claude-desktop',
    description: 'Claude Desktop: <app data>/Claude/claude_desktop_config.json (user; stdio servers only)',
    sources: (ctx) => list(ctx, 'claude-desktop', [{ scope: 'user', path: join(appDataHome(ctx), 'Claude', 'claude_desktop_config.json') }]),
  },
  vscode: {
    name: 'vscode',
    format: 'vscode',
    description: 'VS Code: <app data>/Code/User/mcp.json (user), <root>/.vscode/mcp.json (workspace), `servers` key',
    sources: (ctx) =>
      list(ctx, 'vscode', [
        { scope: 'user', path: join(appDataHome(ctx), 'Code', 'User', 'mcp.json') },
        { scope: 'workspace', path: join(ctx.root, '.vscode', 'mcp.json') },
      ]),
  },
  cursor: {
    name: 'cursor',
    format: 'cursor',
    description: 'Cursor: ~/.cursor/mcp.json (user), <root>/.cursor/mcp.json (project)',
    sources: (ctx) =>
      list(ctx, 'cursor', [
        { scope: 'user', path: join(ctx.home, '.cursor', 'mcp.json') },
        { scope: 'project', path: join(ctx.root, '.cursor', 'mcp.json') },
      ]),
  },
  gemini: geminiStyle('gemini', '.gemini', 'Gemini CLI'),
  qwen: geminiStyle('qwen', '.qwen', 'Qwen Code'),
  cline: {
    name: 'cline',
    format: 'cline',
    description: "Cline: cline_mcp_settings.json in the extension's VS Code storage (user)",
    sources: (ctx) => list(ctx, 'cline', [{ scope: 'user', path: join(vscodeExtensionStorage(ctx, 'saoudrizwan.claude-dev'), 'cline_mcp_settings.json') }]),
  },
  roo: {
    name: 'roo',
    format: 'roo',
    description: "Roo Code: mcp_settings.json in the extension's VS Code storage (user), <root>/.roo/mcp.json (project)",
    sources: (ctx) =>
      list(ctx, 'roo', [
        { scope: 'user', path: join(vscodeExtensionStorage(ctx, 'rooveterinaryinc.roo-cline'), 'mcp_settings.json') },
        { scope: 'project', path: join(ctx.root, '.roo', 'mcp.json') },
      ]),
  },
  windsurf: {
    name: 'windsurf',
    format: 'windsurf',
    description: 'Windsurf: ~/.codeium/windsurf/mcp_config.json (user)',
    sources: (ctx) => list(ctx, 'windsurf', [{ scope: 'user', path: join(ctx.home, '.codeium', 'windsurf', 'mcp_config.json') }]),
  },
  codex: {
    name: 'codex',
    format: 'codex',
    description: 'Codex: $CODEX_HOME/config.toml (default ~/.codex; user), <root>/.codex/config.toml (project), [mcp_servers.<name>] tables',
    sources: (ctx) => {
      const codexHome = (ctx.env ?? process.env).CODEX_HOME;
      const dir = codexHome && isAbsolute(codexHome) ? codexHome : join(ctx.home, '.codex');
      return list(ctx, 'codex', [
        { scope: 'user', path: join(dir, 'config.toml') },
        { scope: 'project', path: join(ctx.root, '.codex', 'config.toml') },
      ]);
    },
  },
  opencode: {
    name: 'opencode',
    format: 'opencode',
    description: 'opencode: ~/.config/opencode/opencode.json[c] (user), <root>/opencode.json[c] (project), `mcp` key',
    sources: (ctx) =>
      list(ctx, 'opencode', [
        { scope: 'user', path: join(configHome(ctx), 'opencode', 'opencode.json') },
        { scope: 'user', path: join(configHome(ctx), 'opencode', 'opencode.jsonc') },
        { scope: 'project', path: join(ctx.root, 'opencode.json') },
        { scope: 'project', path: join(ctx.root, 'opencode.jsonc') },
      ]),
  },
  zed: {
    name: 'zed',
    format: 'zed',
    description: 'Zed: ~/.config/zed/settings.json (user), <root>/.zed/settings.json (project), `context_servers` key',
    sources: (ctx) =>
      list(ctx, 'zed', [
        // Zed keeps its settings under ~/.config/zed on macOS too, and under %APPDATA%\Zed on Windows.
        { scope: 'user', path: (ctx.platform ?? process.platform) === 'win32' ? join(appDataHome(ctx), 'Zed', 'settings.json') : join(configHome(ctx), 'zed', 'settings.json') },
        { scope: 'project', path: join(ctx.root, '.zed', 'settings.json') },
      ]),
  },
  'workspace-yaml': {
    name: 'workspace-yaml',
    description: 'Workspace YAML: <root>/.dsh/mcp.servers.yml (workspace)',
    sources: (ctx) => list(ctx, 'default', [{ scope: 'workspace', path: join(ctx.root, '.dsh', 'mcp.servers.yml') }]),
  },
} satisfies Record<string, Preset>);

/** The preset called `name`, or an `McpReconcilerError` (`usage`) listing the valid names. */
export function resolvePreset(name: string): Preset {
  const preset = Object.hasOwn(presets, name) ? presets[name] : undefined;
  if (preset) return preset;
  const names = Object.keys(presets).join(', ');
  throw new McpReconcilerError(ErrorCode.Usage, `unknown preset "${name}"`, {
    hint: `use one of: ${names}`,
    details: { preset: name, valid: Object.keys(presets) },
  });
}
