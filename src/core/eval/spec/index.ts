/**
 * Speculative-decoding evals: the definitions of τ, acceptance rate and p_k (definitions.ts), the counter difference
 * of a server's /metrics (counters.ts), and the readers of the real tools' output behind one entry point
 * (detect.ts `readSpecOutput`). Pure: no I/O, no vscode.
 */
export * from './types';
export * from './definitions';
export { parsePrometheusText, readSpecCounters, diffCounters, ratesFromCounters, type PromSample, type SpecCounters, type CounterRates } from './counters';
export { readSpecOutput, type SpecReadOutcome, type SpecUnrecognised } from './detect';
export { specEvalResult } from './evalResult';
export { readSglangBenchSpeculative } from './readers/sglang';
export { readSpecforgeBench, readSpecforgeServerBench } from './readers/specforge';
export { readVllmSpecDecode } from './readers/vllm';
export { readEagleAnswers } from './readers/eagle';
export { readAiperfSummary, readAiperfRecords } from './readers/aiperf';
