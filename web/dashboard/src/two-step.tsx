import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { failure } from './api.js';

/**
 * An action that cannot be taken back, in two steps, so that a stray click does nothing: a button
 * (`start`; `startLabel` names it for a screen reader, with the row it acts on), then the question
 * with a "yes" (`yes`), which runs `run`, and a way back (`back`). Inline beside the row's other
 * actions, or `boxed` in a box of its own for a question that explains more. A refusal shows under
 * it, and the question stays open.
 */
export function TwoStep(props: {
  start: string;
  startLabel: string;
  question: ComponentChildren;
  questionLabel: string;
  yes: string;
  back: string;
  run: () => Promise<unknown>;
  boxed?: boolean;
}) {
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState('');
  if (!confirming) {
    return (
      <button type="button" class="danger" onClick={() => setConfirming(true)} aria-label={props.startLabel}>
        {props.start}
      </button>
    );
  }
  const go = async () => {
    setError('');
    try {
      await props.run();
    } catch (err) {
      setError(failure(err));
    }
  };
  const yes = (
    <button type="button" class="danger" onClick={go}>
      {props.yes}
    </button>
  );
  const back = (
    <button type="button" class="secondary" onClick={() => setConfirming(false)}>
      {props.back}
    </button>
  );
  if (props.boxed) {
    return (
      <div class="confirm-box" role="group" aria-label={props.questionLabel}>
        <p>{props.question}</p>
        <div class="actions">
          {yes}
          {back}
        </div>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
      </div>
    );
  }
  return (
    <span class="confirm" role="group" aria-label={props.questionLabel}>
      {props.question} {yes} {back}
      {error && (
        <span class="error" role="alert">
          {error}
        </span>
      )}
    </span>
  );
}
