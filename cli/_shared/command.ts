/**
 * Declarative command trees and the one runner every program uses.
 *
 * A program is a {@link ProgramSpec}: a tree of {@link CommandSpec}s, each with its own flags,
 * the flag groups it accepts, its positional arguments and a lazy `load` of the module that
 * implements it. {@link runCli} parses the command line with commander, validates every flag,
 * configures logging from group L, loads the command module with a dynamic import and calls
 * `run(options, args, ctx)`. It is the single place that turns errors into exit codes:
 * usage errors print `Error: <message>` and `Run '<command> --help' for usage.` and return 2;
 * other failures print `Error: <message>` and return 1.
 *
 * Flags behave like Go's (cobra/pflag) persistent flags: a flag given before a subcommand name
 * is parsed by the parent, after it by the subcommand; the value closest to the leaf wins.
 * @module
 */

import { Command, CommanderError, Help, type Option } from "../../lib/deps/commander.ts";
import {
  addFlags,
  type AnyFlag,
  defaultText,
  FLAG_SPEC,
  FlagValueError,
  type FlagValues,
  normalizeBoolArgs,
  type OptionsOf,
  resolveOptions,
  type SpecOption,
} from "../../lib/flags/mod.ts";
import { type CliContext, UsageError } from "./context.ts";
import type { FlagGroup } from "./groups.ts";
import { configureLogging } from "../../lib/log/mod.ts";
import { type LoggingFlagValues, toLogOptions } from "./logging.ts";

/** The module implementing one command, loaded only when that command runs. */
export interface CommandModule<O> {
  /**
   * Runs the command. `opts` holds every flag the command accepts (defaults filled, validated,
   * durations in milliseconds); `args` the positional arguments (variadic ones flattened).
   * Return an exit code (default 0); throw {@link UsageError} for wrong usage (exit 2) or any
   * Error for a failure (exit 1).
   */
  run(opts: O, args: string[], ctx: CliContext): Promise<number | void>;
}

/** One command of a program's tree. */
export interface CommandSpec {
  /** Name as typed (`proxy-config`). */
  readonly name: string;
  /** Other names (`pc`). */
  readonly aliases?: readonly string[];
  /** One-line description. */
  readonly summary: string;
  /** Positional arguments in commander syntax: `<proxyID>`, `[name]`, `<ports...>`. */
  readonly args?: readonly string[];
  /** Flags of this command only (its own table). */
  readonly flags: readonly AnyFlag[];
  /** Shared flag groups this command also accepts (L, I, probe, version, globals...). */
  readonly groups: readonly FlagGroup[];
  /** Loads the implementation; absent: the command is not implemented yet (exit 1). */
  // deno-lint-ignore no-explicit-any
  readonly load?: () => Promise<CommandModule<any>>;
  /** Subcommands. */
  readonly subcommands: readonly CommandSpec[];
  /** Not listed in help. */
  readonly hidden?: boolean;
  /**
   * Text printed at the end of the command's help (`--help` and `help <command>`): accepted
   * values, examples. Lines are printed as written (no wrapping); keep them within
   * {@link HELP_WIDTH} columns.
   */
  readonly helpAfter?: string;
}

/** Union of the flags of a command declared with {@link command}. */
type FlagsOf<F extends readonly AnyFlag[], G extends readonly FlagGroup[]> =
  | F[number]
  | G[number]["flags"][number];

/**
 * Declares a command; `load` must return a module whose `run` accepts the options object of
 * exactly these flags and groups, so the type checker catches a mismatch.
 */
export function command<
  const F extends readonly AnyFlag[] = readonly [],
  const G extends readonly FlagGroup[] = readonly [],
>(spec: {
  name: string;
  aliases?: readonly string[];
  summary: string;
  args?: readonly string[];
  flags?: F;
  groups?: G;
  load?: () => Promise<CommandModule<OptionsOf<FlagsOf<F, G>>>>;
  subcommands?: readonly CommandSpec[];
  hidden?: boolean;
  helpAfter?: string;
}): CommandSpec {
  return Object.freeze({
    ...spec,
    flags: spec.flags ?? [],
    groups: spec.groups ?? [],
    subcommands: spec.subcommands ?? [],
    load: spec.load as CommandSpec["load"],
  });
}

/** A whole program. */
export interface ProgramSpec {
  /** Program name (`meshctl`). */
  readonly name: string;
  /** Log scopes of group L. */
  readonly logScopes: readonly string[];
  /** The root command (its name is the program name). */
  readonly root: CommandSpec;
  /**
   * Fills defaults that come from the environment (read once, from `ctx.env`) into the options
   * object before the action runs, e.g. meshctl's `--orchconfig`.
   */
  readonly envDefaults?: (
    opts: Record<string, unknown>,
    env: Readonly<Record<string, string>>,
  ) => Record<string, unknown>;
}

/** Every flag a command accepts: its own, then its groups'. */
export function allFlags(spec: CommandSpec): AnyFlag[] {
  return [...spec.flags, ...spec.groups.flatMap((g) => g.flags)];
}

/** Signals the end of parsing when help was shown. */
class HelpShown {
  constructor(readonly exitCode: number) {}
}

/** Commander's "error: unknown option '--x'\n(Did you mean --y?)" → "Unknown option '--x' (did you mean --y?)". */
function cleanMessage(message: string): string {
  const one = message.replace(/^error:\s*/, "").replace(/\s*\n\s*/g, " ").replace(
    /\(Did you mean/,
    "(did you mean",
  ).trim();
  return one.charAt(0).toUpperCase() + one.slice(1);
}

/** Drops one final period before `(default: ...)`, but never from an ellipsis (`...`, `..`). */
export function stripPeriod(text: string): string {
  return /[^.]\.$/.test(text) ? text.slice(0, -1) : text;
}

/**
 * Width help is laid out for: descriptions wrap (indented under their column) so that lines fit
 * in this many columns, whatever the terminal; flag and command names are never broken.
 */
export const HELP_WIDTH = 100;

class MeshHelp extends Help {
  constructor(private readonly after = "") {
    super();
    this.helpWidth = HELP_WIDTH;
  }
  override optionTerm(option: Option): string {
    const spec = (option as SpecOption)[FLAG_SPEC];
    if (!spec) return super.optionTerm(option);
    const short = spec.short ? `-${spec.short}, ` : "    ";
    return `${short}--${spec.name}${spec.type.isBool ? "" : ` ${spec.type.name}`}`;
  }
  override optionDescription(option: Option): string {
    const spec = (option as SpecOption)[FLAG_SPEC];
    if (!spec) return super.optionDescription(option);
    const text = defaultText(spec);
    return text === "" ? spec.help : `${stripPeriod(spec.help)} (default: ${text})`;
  }
  /**
   * A command in its parent's list: the name and first alias only (`proxy-config|pc`), as cobra
   * lists them; arguments and flags are in the command's own help.
   */
  override subcommandTerm(cmd: Command): string {
    const alias = cmd.aliases()[0];
    return alias ? `${cmd.name()}|${alias}` : cmd.name();
  }
  override formatHelp(cmd: Command, helper: Help): string {
    const text = super.formatHelp(cmd, helper);
    return this.after ? `${text}${this.after.replace(/\n*$/, "\n")}` : text;
  }
}

/** Name of the `help [command...]` subcommand every program has. */
const HELP_COMMAND = "help";

interface Selected {
  chain: { spec: CommandSpec; values: FlagValues }[];
  args: string[];
}

// long: builds the commander tree and its parse hooks over shared parse state
/**
 * Parses `argv` for `program` and runs the selected command. Returns the exit code; never calls
 * `Deno.exit` (the entry file does).
 */
export async function runCli(
  program: ProgramSpec,
  argv: readonly string[],
  ctx: CliContext,
): Promise<number> {
  let out = "";
  let err = "";
  let parsingPath: string[] = [program.name];
  let selected: Selected | undefined;

  const build = (spec: CommandSpec, parents: { spec: CommandSpec; values: FlagValues }[]) => {
    const values: FlagValues = new Map();
    const chain = [...parents, { spec, values }];
    const path = chain.map((c) => c.spec.name);
    const cmd = new Command(spec.name);
    cmd.description(spec.summary);
    for (const alias of spec.aliases ?? []) cmd.alias(alias);
    for (const a of spec.args ?? []) cmd.argument(a);
    addFlags(cmd, spec.flags, values);
    for (const g of spec.groups) addFlags(cmd, g.flags, values, g.heading);
    configure(cmd, path, spec.helpAfter);
    const flags = allFlags(spec);
    const parseOptions = cmd.parseOptions.bind(cmd);
    const subNames = new Set(spec.subcommands.flatMap((s) => [s.name, ...(s.aliases ?? [])]));
    if (parents.length === 0 && spec.subcommands.length > 0) subNames.add(HELP_COMMAND);
    cmd.parseOptions = (args: string[]) => {
      parsingPath = path;
      // Options after a subcommand name belong to the subcommand: leave them as typed.
      const cut = args.findIndex((a) => subNames.has(a));
      const mine = cut === -1 ? args : args.slice(0, cut);
      const rest = cut === -1 ? [] : args.slice(cut);
      return parseOptions([...normalizeBoolArgs(mine, flags), ...rest]);
    };
    if (spec.subcommands.length > 0) {
      cmd.enablePositionalOptions();
      cmd.allowExcessArguments(true);
      // When the first word names a subcommand, only that one is built in full: the others
      // cannot run, and building every flag of every command is a tenth of `version`'s time.
      const first = parents.length === 0 ? argv[0] : undefined;
      const chosen = spec.subcommands.find((s) =>
        first !== undefined && (s.name === first || (s.aliases ?? []).includes(first))
      );
      for (const sub of spec.subcommands) {
        const sc = !chosen || sub === chosen
          ? build(sub, chain)
          : new Command(sub.name).description(sub.summary);
        cmd.addCommand(sc, sub.hidden ? { hidden: true } : {});
      }
      if (parents.length === 0) cmd.addCommand(helpCommand(cmd, path));
    }
    cmd.action(() => {
      const args = (cmd.processedArgs as unknown[]).flatMap((a) =>
        a === undefined ? [] : Array.isArray(a) ? a.map(String) : [String(a)]
      );
      if (spec.subcommands.length > 0 && (spec.args ?? []).length === 0 && cmd.args.length > 0) {
        const name = JSON.stringify(cmd.args[0]);
        throw new UsageError(`Unknown command ${name} for ${JSON.stringify(path.join(" "))}`, path);
      }
      selected = { chain, args };
    });
    return cmd;
  };

  /** Help option, output capture, help rendering and error mapping of one commander command. */
  function configure(cmd: Command, path: readonly string[], helpAfter?: string) {
    cmd.helpOption("-h, --help", `Help for ${path.join(" ")}.`);
    cmd.configureOutput({
      writeOut: (s) => void (out += s),
      writeErr: (s) => void (err += s),
      outputError: () => {},
    });
    cmd.createHelp = () => Object.assign(new MeshHelp(helpAfter), cmd.configureHelp());
    cmd.exitOverride((e: CommanderError) => {
      if (e.code === "commander.helpDisplayed" || e.code === "commander.help") {
        throw new HelpShown(e.exitCode);
      }
      throw new UsageError(cleanMessage(e.message), path);
    });
  }

  /**
   * `<program> help [command...]` (as cobra and kubectl have it): prints the help of the named
   * command, the same text as `<program> <command...> --help`, and exits 0. Words after a command
   * without subcommands are ignored, as cobra does (`help get vs` is the help of `get`); an
   * unknown name where subcommands are expected is a usage error.
   */
  function helpCommand(root: Command, rootPath: readonly string[]): Command {
    const path = [...rootPath, HELP_COMMAND];
    const cmd = new Command(HELP_COMMAND);
    cmd.description("Help about any command.");
    cmd.argument("[command...]", "Command path, e.g. get or experimental rbac can.");
    configure(cmd, path);
    cmd.action(() => {
      const names = cmd.args;
      type Node = { readonly commands: readonly Node[]; name(): string; aliases(): string[] };
      let target: Node = root;
      for (const name of names) {
        if (target !== root && target.commands.length === 0) break;
        const next = target.commands.find((c) => c.name() === name || c.aliases().includes(name));
        if (!next) {
          throw new UsageError(`Unknown help topic ${JSON.stringify(names.join(" "))}`, rootPath);
        }
        target = next;
      }
      out += (target as Command).helpInformation();
      throw new HelpShown(0);
    });
    return cmd;
  }

  const root = build(program.root, []);
  try {
    await root.parseAsync([...argv], { from: "user" });
  } catch (e) {
    await flush();
    if (e instanceof HelpShown) return e.exitCode;
    if (e instanceof FlagValueError) return await usage(e.message, parsingPath);
    if (e instanceof UsageError) return await usage(e.message, e.commandPath ?? parsingPath);
    throw e; // programmer error in the tree
  }
  await flush();
  if (!selected) return 0;

  const { chain, args } = selected;
  const leaf = chain[chain.length - 1].spec;
  const path = chain.map((c) => c.spec.name);
  // A command with subcommands and nothing of its own to do prints its help, like cobra.
  if (!leaf.load && leaf.subcommands.length > 0 && leaf !== program.root) {
    await ctx.stdout.write(findCommander(root, path.slice(1)).helpInformation());
    return 0;
  }
  if (!leaf.load && leaf === program.root && leaf.flags.length === 0) {
    await ctx.stdout.write(root.helpInformation());
    return 0;
  }
  if (!leaf.load) {
    await ctx.stderr.write(`Error: ${path.join(" ")} is not implemented yet\n`);
    return 1;
  }
  const flags = allFlags(leaf);
  let opts = resolveOptions(flags, chain.map((c) => c.values).reverse());
  if (program.envDefaults) opts = Object.freeze(program.envDefaults({ ...opts }, ctx.env));
  const runCtx: CliContext = { ...ctx, commandPath: path, args: Object.freeze([...argv]) };
  let logging: { dispose(): Promise<void> } | undefined;
  try {
    if (leaf.groups.some((g) => g.id === "L")) {
      logging = await configureLogging(
        toLogOptions(opts as unknown as LoggingFlagValues, program.logScopes),
      );
    }
    const mod = await leaf.load();
    return (await mod.run(opts, args, runCtx)) ?? 0;
  } catch (e) {
    if (e instanceof UsageError) return await usage(e.message, e.commandPath ?? path);
    // the reader of our output went away (`| head`): end quietly, as kubectl does
    if (e instanceof Deno.errors.BrokenPipe) return 0;
    const message = e instanceof Error ? e.message : String(e);
    await ctx.stderr.write(`Error: ${message.split("\n").join(" ")}\n`);
    return 1;
  } finally {
    await logging?.dispose();
  }

  async function flush() {
    if (out) await ctx.stdout.write(out);
    if (err) await ctx.stderr.write(err);
    out = err = "";
  }
  async function usage(message: string, at: readonly string[]): Promise<number> {
    await ctx.stderr.write(
      `Error: ${message.split("\n").join(" ")}\nRun '${at.join(" ")} --help' for usage.\n`,
    );
    return 2;
  }
}

function findCommander(root: Command, names: string[]): Command {
  let cmd = root;
  for (const n of names) cmd = cmd.commands.find((c) => c.name() === n) as Command ?? cmd;
  return cmd;
}
