/**
 * The controller facade, kept at its historical path so `../controller.js`
 * imports (hosts, the CLI, tests, built fixtures) keep working; the code
 * lives in `src/controller/`.
 */
export { createMcpController, McpController } from './controller/controller.js';
