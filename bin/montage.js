#!/usr/bin/env -S node --max-semi-space-size=64
// The young generation's semi-spaces raised to 64 MB: fewer objects outlive a scavenge, so fewer
// full collections pause a busy server. package.json's start script gives node the same flags
// (docs/deploy.md, "Node's flags and memory").
import '../dist/cli.js';
