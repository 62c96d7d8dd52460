import { createHash } from 'node:crypto';
import { SerializerSelector, type Serializer, type SerializerFactory } from '@fastify/fast-json-stringify-compiler';
import { BuiltOnFirstUse } from './built-on-first-use.js';

/** The serializers compiled in this process, by the named schemas and options they were compiled with and the response schema. */
const compiled = new Map<string, Serializer>();

/**
 * Fastify's serializer factory (fast-json-stringify, as Fastify uses it by default), with each
 * response schema compiled once per process. Compiling one is costly here: fast-json-stringify
 * checks the schema and adds every named schema of the API (registerComponents, the Problem) to
 * its reference resolver again for each route and status, and most routes share their error
 * responses; compiled route by route, the server spent 3.3-5.4 s of CPU building its routes before
 * it could listen. A serializer depends only on its schema, the named schemas and the options, all
 * in the key (the named schemas and options hashed once per factory call), and is a pure function
 * of the value it is given, so routes, and apps of one process (tests), can share it.
 */
export function cachedSerializerFactory(): SerializerFactory {
  const factory = SerializerSelector();
  return (externalSchemas, serializerOpts) => {
    const compile = factory(externalSchemas, serializerOpts);
    const context = createHash('sha256')
      .update(JSON.stringify([externalSchemas, serializerOpts ?? null]))
      .digest('base64');
    return (route) => {
      // (Fastify also names the content type of a response schema given per content type)
      const key = `${context} ${(route as { contentType?: string }).contentType ?? ''} ${JSON.stringify(route.schema)}`;
      let serialize = compiled.get(key);
      if (!serialize) {
        // Built when the route first answers with this status, not when the app starts: most of a
        // process's routes answer few of their statuses, and building them all was ~1 s of `npm
        // start`. compileEverySerializer builds the rest (the tests call it, so a schema that
        // cannot be built fails there, not at a user's first response).
        const build = builds.once(() => compile(route));
        serialize = (value: unknown) => build()(value);
        compiled.set(key, serialize);
      }
      return serialize;
    };
  };
}

/** The builds of serializers not asked for yet. */
const builds = new BuiltOnFirstUse<Serializer>();

/** Builds every serializer the process's apps have asked for and not used yet; throws what a schema that cannot be built throws. */
export function compileEverySerializer(): void {
  builds.buildAll();
}

/** How many serializers this process has compiled (each distinct schema once). */
export function serializersCompiled(): number {
  return compiled.size;
}
