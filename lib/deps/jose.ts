/** JWT / JWKS. */
export * from "npm:jose@6.2.17";
