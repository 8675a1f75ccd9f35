import { test } from 'node:test';
import assert from 'node:assert/strict';
import { incompleteReason, isMetricsLog, isExtraMetricsLog, orbaxStep, parseCheckpointName } from '../../src/core/discovery/checkpointLayout';

test('checkpoint folders in every supported layout', () => {
  const cases: Array<[string, number, string]> = [
    ['step_10000', 10000, 'step_N'],
    ['step-500', 500, 'step_N'],
    ['step22000', 22000, 'step_N'],
    ['checkpoint-500', 500, 'checkpoint-N'],
    ['checkpoint_1500', 1500, 'checkpoint-N'],
    ['global_step1200', 1200, 'global_stepN'],
    ['global_step_7', 7, 'global_stepN'],
    ['ckpt_300', 300, 'ckpt_N'],
    ['ckpt-0042', 42, 'ckpt_N'],
  ];
  for (const [name, step, layout] of cases) {
    assert.deepEqual(parseCheckpointName(name, true), { step, layout }, name);
  }
});

test('folders that are not checkpoints', () => {
  for (const name of ['checkpoints', 'logs', 'step', 'steps_100', 'run_500', 'checkpoint-latest', 'my_step_100', 'step_10000.bak']) {
    assert.equal(parseCheckpointName(name, true), undefined, name);
  }
});

test('a folder name is only a checkpoint as a folder; as a file it needs an extension', () => {
  assert.equal(parseCheckpointName('step_100', false), undefined);
  assert.equal(parseCheckpointName('model_step_500.pt', true), undefined);
});

test('flat checkpoint files take the number after step/iter/it/checkpoint/ckpt', () => {
  const cases: Array<[string, number]> = [
    ['model_step_500.pt', 500],
    ['checkpoint_12000.pth', 12000],
    ['step=300.ckpt', 300],
    ['iter_0001000.pt', 1000],
    ['ckpt-77.safetensors', 77],
    ['model_it5000.bin', 5000],
    ['run3_step_900.pt', 900], // not the 3 of run3
    ['weights_0300.pt', 300], // no keyword: the last number standing alone
    ['epoch_12.pth', 12],
  ];
  for (const [name, step] of cases) {
    assert.deepEqual(parseCheckpointName(name, false), { step, layout: 'flat' }, name);
  }
});

test('Lightning checkpoint files', () => {
  assert.deepEqual(parseCheckpointName('epoch=3-step=1200.ckpt', false), { step: 1200, layout: 'lightning' });
  assert.deepEqual(parseCheckpointName('epoch=3-step=1200-v1.ckpt', false), { step: 1200, layout: 'lightning' });
  // A custom filename with no step: the epoch orders it, the decimal loss does not.
  assert.deepEqual(parseCheckpointName('epoch=3-val_loss=0.25.ckpt', false), { step: 3, layout: 'lightning' });
});

test('files without a step number, or companions of a checkpoint, are not checkpoints', () => {
  for (const name of [
    'model.safetensors',
    'checkpoint.pt',
    'last.ckpt',
    'final.pt',
    'resnet50.pt',
    'llama3.pth',
    'optimizer.pt',
    'optimizer_0.pt',
    'rng_state_3.pth',
    'scheduler.pt',
    'training_args.bin',
    'model-00001-of-00004.safetensors',
    'pytorch_model-00002-of-00002.bin',
    'mp_rank_00_model_states.pt',
    'zero_pp_rank_0_mp_rank_00_optim_states.pt',
    'model_step_500.txt',
    'step_500.json',
  ]) {
    assert.equal(parseCheckpointName(name, false), undefined, name);
  }
});

test('steps are numbers, so step_9000 sorts before step_10000', () => {
  const names = ['step_10000', 'step_9000', 'step_22000', 'step_800'];
  const sorted = names.map((n) => ({ n, s: parseCheckpointName(n, true)!.step })).sort((a, b) => a.s - b.s).map((x) => x.n);
  assert.deepEqual(sorted, ['step_800', 'step_9000', 'step_10000', 'step_22000']);
});

test('metrics logs', () => {
  for (const name of ['train.jsonl', 'metrics.jsonl', 'metrics.csv', 'metrics_val.csv', 'progress.csv', 'log.csv', 'log_train.csv', 'trainer_state.json', 'events.out.tfevents.1712345678.host.1234.0']) {
    assert.equal(isMetricsLog(name), true, name);
  }
  for (const name of ['data.csv', 'results.csv', 'config.json', 'train.json', 'events.out', 'README.md', 'training.log', 'history.csv']) {
    assert.equal(isMetricsLog(name, 'run'), false, name);
  }
  for (const name of ['data.csv', 'train.csv', 'predictions.csv', 'config.json', 'events.out', 'README.md', 'train.log']) {
    assert.equal(isMetricsLog(name, 'logs'), false, name);
  }
});

test('other CSVs and Keras training.log are logs inside logs/, and beside a run only (isExtraMetricsLog)', () => {
  for (const name of ['history.csv', 'results.csv', 'training.log', 'keras_log.csv']) assert.equal(isMetricsLog(name, 'logs'), true, name);
  for (const name of ['history.csv', 'results.csv', 'training.log']) assert.equal(isExtraMetricsLog(name), true, name);
  // Dataset names stay data; names isMetricsLog already takes are not "extra".
  for (const name of ['train.csv', 'val.csv', 'test_1.csv', 'predictions.csv', 'metrics.csv', 'progress.csv', 'train.log', 'run.txt']) {
    assert.equal(isExtraMetricsLog(name), false, name);
  }
});

test('a dataset split jsonl is a log only inside logs/', () => {
  assert.equal(isMetricsLog('train.jsonl', 'logs'), true);
  assert.equal(isMetricsLog('train.jsonl', 'run'), false);
  assert.equal(isMetricsLog('val.jsonl', 'run'), false);
  assert.equal(isMetricsLog('metrics.jsonl', 'run'), true);
  assert.equal(isMetricsLog('train_log.jsonl', 'run'), true);
});

test('a folder checkpoint still being written says why; a finished one says nothing', () => {
  const f = (...names: string[]) => names.map((name) => ({ name, bytes: 10 }));
  assert.equal(incompleteReason(f('checkpoint.pt', 'optimizer.pt')), undefined);
  assert.equal(incompleteReason([]), 'holds no files yet');
  assert.equal(incompleteReason(f('checkpoint.pt.tmp')), 'checkpoint.pt.tmp is still being written');
  assert.equal(incompleteReason(f('model.safetensors', 'sub/optimizer.pt.partial')), 'sub/optimizer.pt.partial is still being written');
  // torch.distributed.checkpoint: shards, and .metadata written last (as .metadata.tmp, then renamed).
  assert.equal(incompleteReason(f('__0_0.distcp', '__1_0.distcp', '.metadata')), undefined);
  assert.match(incompleteReason(f('__0_0.distcp', '__1_0.distcp')) ?? '', /without their \.metadata/);
  assert.match(incompleteReason(f('__0_0.distcp', '.metadata.tmp')) ?? '', /\.metadata\.tmp is still being written/);
  // Hugging Face shards: all of them, or which are there.
  assert.equal(incompleteReason(f('model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors', 'model.safetensors.index.json')), undefined);
  assert.equal(incompleteReason(f('model-00001-of-00003.safetensors', 'model-00003-of-00003.safetensors')), '2 of 3 shards of model.safetensors are there');
  assert.equal(incompleteReason(f('pytorch_model-00001-of-00002.bin')), '1 of 2 shards of pytorch_model.bin are there');
});

test('Megatron-LM iteration folders and fairseq mid-epoch files, as their savers name them', () => {
  // megatron/training/checkpointing.py get_checkpoint_name: 'iter_{:07d}'.format(iteration)
  assert.deepEqual(parseCheckpointName('iter_0001000', true), { step: 1000, layout: 'iter_N' });
  assert.deepEqual(parseCheckpointName('iter_0000000', true), { step: 0, layout: 'iter_N' });
  assert.equal(parseCheckpointName('iter_0001000_tmp', true), undefined, 'a staging folder is no checkpoint');
  // fairseq/checkpoint_utils.py save_checkpoint: checkpoint_{epoch}_{updates}{suffix}.pt
  assert.deepEqual(parseCheckpointName('checkpoint_3_12000.pt', false), { step: 12000, layout: 'flat' });
  assert.deepEqual(parseCheckpointName('checkpoint_3_12000-shard0.pt', false), { step: 12000, layout: 'flat' });
});

test("Orbax step folders are bare numbers holding Orbax's marker files; a bare number alone is not one", () => {
  assert.deepEqual(orbaxStep('1000', ['_CHECKPOINT_METADATA', 'default']), { step: 1000, layout: 'orbax' });
  assert.deepEqual(orbaxStep('7', ['commit_success.txt', 'state']), { step: 7, layout: 'orbax' });
  assert.equal(orbaxStep('0', ['checkpoints', 'logs']), undefined, 'a seed folder');
  assert.equal(orbaxStep('step_5', ['_CHECKPOINT_METADATA']), undefined);
  assert.deepEqual(orbaxStep('300.orbax-checkpoint-tmp-1764590400', ['default']), {
    step: 300,
    layout: 'orbax',
    incomplete: 'Orbax is still writing it (a temporary folder until the save is renamed)',
  });
});
