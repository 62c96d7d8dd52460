// Prints an engine WebAssembly kernel in the text format, for debugging (src/blend/engine/wasm/text.ts).
// Usage: npm run wasm:print -- <module or function>   e.g. `rows`, `stack/median/5`, `expandRow`, `rows/expandRow`
//        npm run wasm:print                            lists every module and its functions
import { engineModules } from '../src/blend/engine/wasm/modules.js';
import { moduleText } from '../src/blend/engine/wasm/text.js';

const modules = engineModules();
const wanted = process.argv[2];

if (!wanted) {
  for (const [name, source] of modules) console.log(`${name}: ${Object.keys(source().functions).join(' ')}`);
  process.exit(0);
}

const whole = modules.get(wanted);
if (whole) {
  console.log(moduleText(whole()));
} else {
  // a function: `module/function`, or the first module that has a function of that name
  const slash = wanted.lastIndexOf('/');
  const [moduleName, fnName] = slash > 0 ? [wanted.slice(0, slash), wanted.slice(slash + 1)] : [null, wanted];
  const candidates = moduleName ? [modules.get(moduleName)].filter((m) => m !== undefined) : [...modules.values()];
  const source = candidates.map((m) => m()).find((s) => fnName in s.functions);
  if (!source) {
    console.error(`no engine module or kernel function named ${wanted}: run npm run wasm:print for the list`);
    process.exit(1);
  }
  console.log(moduleText({ functions: { [fnName]: source.functions[fnName]! }, pages: source.pages }));
}
