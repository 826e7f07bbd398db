import { isAbsolute, join } from 'node:path';
import { ErrorCode, McpReconcilerError } from '../errors.js';
import type { ConfigSource } from './sources.js';

/** What a preset needs to place its files. */
export interface PresetContext {
  /** Absolute workspace root. */
  root: string;
  /** The user's home directory. */
  home: string;
  /** For `XDG_CONFIG_HOME`; defaults to `process.env`. */
  env?: NodeJS.ProcessEnv;
}

/** A ready list of sources for one host's file layout (SPEC §8.3). */
export interface Preset {
  name: string;
  description: string;
  sources(ctx: PresetContext): ConfigSource[];
}

/** `$XDG_CONFIG_HOME` when it is absolute (the XDG rule), else `~/.config`. */
export function configHome(ctx: PresetContext): string {
  const xdg = (ctx.env ?? process.env).XDG_CONFIG_HOME;
  return xdg && isAbsolute(xdg) ? xdg : join(ctx.home, '.config');
}

function list(ctx: PresetContext, items: Omit<ConfigSource, 'root'>[]): ConfigSource[] {
  return items.map((s) => ({ ...s, root: ctx.root }));
}

/** Dot-folder layout shared by Gemini CLI and Qwen Code. */
function geminiStyle(name: string, dir: string, host: string): Preset {
  return {
    name,
    description: `${host}: ~/${dir}/settings.json (user), <root>/${dir}/settings.json (workspace), with mcp.allowed / mcp.excluded`,
    sources: (ctx) =>
      list(ctx, [
        { scope: 'user', path: join(ctx.home, dir, 'settings.json'), keys: ['mcpServers'] },
        { scope: 'workspace', path: join(ctx.root, dir, 'settings.json'), keys: ['mcpServers'] },
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
      list(ctx, [
        { scope: 'user', path: join(configHome(ctx), 'mcp-reconciler', 'settings.json') },
        { scope: 'project', path: join(ctx.root, '.mcp.json') },
        { scope: 'workspace', path: join(ctx.root, '.mcp-reconciler', 'settings.json') },
        { scope: 'workspace', path: join(ctx.root, '.mcp-reconciler', 'mcp.servers.yml') },
      ]),
  },
  'claude-code': {
    name: 'claude-code',
    description: 'Claude Code: ~/.claude.json (user), <root>/.mcp.json (project)',
    sources: (ctx) =>
      list(ctx, [
        { scope: 'user', path: join(ctx.home, '.claude.json'), keys: ['mcpServers'] },
        { scope: 'project', path: join(ctx.root, '.mcp.json'), keys: ['mcpServers'] },
      ]),
  },
  vscode: {
    name: 'vscode',
    description: 'VS Code: <root>/.vscode/mcp.json (workspace, `servers` key)',
    sources: (ctx) => list(ctx, [{ scope: 'workspace', path: join(ctx.root, '.vscode', 'mcp.json'), keys: ['servers'] }]),
  },
  cursor: {
    name: 'cursor',
    description: 'Cursor: ~/.cursor/mcp.json (user), <root>/.cursor/mcp.json (project)',
    sources: (ctx) =>
      list(ctx, [
        { scope: 'user', path: join(ctx.home, '.cursor', 'mcp.json'), keys: ['mcpServers'] },
        { scope: 'project', path: join(ctx.root, '.cursor', 'mcp.json'), keys: ['mcpServers'] },
      ]),
  },
  gemini: geminiStyle('gemini', '.gemini', 'Gemini CLI'),
  qwen: geminiStyle('qwen', '.qwen', 'Qwen Code'),
  'workspace-yaml': {
    name: 'workspace-yaml',
    description: 'Workspace YAML: <root>/.dsh/mcp.servers.yml (workspace)',
    sources: (ctx) => list(ctx, [{ scope: 'workspace', path: join(ctx.root, '.dsh', 'mcp.servers.yml') }]),
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
