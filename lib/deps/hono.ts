/** HTTP routing on Deno.serve. */
export { Hono } from "npm:hono@4.13.19";
export type { Context, MiddlewareHandler } from "npm:hono@4.13.19";
