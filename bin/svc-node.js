#!/usr/bin/env node
// The polyfill is evaluated before anything else (ESM evaluates imports in order).
import '../dist/polyfill.js'
import '../dist/cli/svc-node.js'
