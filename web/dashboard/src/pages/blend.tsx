import { useEffect, useState } from 'preact/hooks';
import { api, type Page, Problem, sameOrigin, when } from '../api.js';
import { link } from '../router.js';
import { ErrorNote, useApi } from '../use-api.js';

/** GET /v1/blend/status/:jobId and the items of GET /v1/blend/jobs (BlendJobSchema in src/blend/blend.schemas.ts). */
interface BlendJob {
  jobId: string;
  projectId: string;
  status: 'queued' | 'processing' | 'completed' | 'failed' | 'cancelled';
  blendType: string;
  requestedBlendType: string;
  options: { preserveBackground: boolean; qualityThreshold: number; align: boolean; outputFormat: string };
  /** The input URLs as the client sent them; the first is the reference frame. */
  images: string[];
  attempts: number;
  createdAt: string;
  startedAt: string | null;
  completedAt: string | null;
  progress: Progress | null;
  cancelRequestedAt?: string;
  resultUrl?: string;
  resultUrlExpiresAt?: string;
  width?: number;
  height?: number;
  processingTime?: number;
  qualityScore?: number;
  quality?: { alignment: number; sharpness: number; exposure: number; ghosting: number | null };
  error?: { code: string; message: string; imageIndex: number | null };
}

/** The job's progress (docs/blend.md, "Progress"): the share done of the current stage. */
interface Progress {
  stage: 'fetching' | 'aligning' | 'blending' | 'encoding';
  fraction: number;
  framesDone: number;
  framesTotal: number;
}

const STAGES = ['fetching', 'aligning', 'blending', 'encoding'] as const;
const OPEN = new Set(['queued', 'processing']);
/** The share of the whole job done: the stages count alike. */
const overall = (p: Progress) => (STAGES.indexOf(p.stage) + p.fraction) / STAGES.length;

const score = (job: BlendJob) => (job.qualityScore === undefined ? '—' : job.qualityScore.toFixed(2));
const seconds = (job: BlendJob) => (job.processingTime === undefined ? '—' : `${(job.processingTime / 1000).toFixed(1)} s`);
const count = (n: number) => `${n} ${n === 1 ? 'image' : 'images'}`;

/**
 * An input URL is the client's, on another origin: only http(s) URLs are shown (the CSP allows
 * images, never scripts, from them) and they are fetched without a Referer.
 */
const remote = (url: string): string | null => {
  try {
    const u = new URL(url);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : null;
  } catch {
    return null;
  }
};

const QUALITY = [
  ['alignment', 'Alignment'],
  ['sharpness', 'Sharpness'],
  ['exposure', 'Exposure'],
  ['ghosting', 'Ghosting'],
] as const;

export function BlendPage() {
  const jobs = useApi<Page<BlendJob>>('/blend/jobs?limit=48');
  return (
    <section aria-labelledby="blend-title">
      <h1 id="blend-title">Blend jobs</h1>
      {jobs.error && <ErrorNote error={jobs.error} />}
      {jobs.data?.data.length === 0 && <p>No blend jobs yet: start one with POST /v1/blend/start.</p>}
      <ul class="gallery">
        {jobs.data?.data.map((job) => (
          <li key={job.jobId}>
            <a {...link(`/blend/${job.jobId}`)} class="tile">
              {job.resultUrl ? <img src={sameOrigin(job.resultUrl)} alt={`Result of ${job.jobId}`} loading="lazy" /> : <span class={`placeholder status-${job.status}`}>{job.status}</span>}
              <span class="tile-text">
                <strong>{job.projectId}</strong> · {job.blendType} · {count(job.images.length)}
                <br />
                <span class={`status status-${job.status}`}>{job.status}</span> · quality {score(job)} · {seconds(job)}
              </span>
            </a>
          </li>
        ))}
      </ul>
    </section>
  );
}

/**
 * The job as it is now: loaded once, then followed through its event stream (the session cookie
 * authenticates it) while it is queued or processing; the final event brings the whole record.
 */
function useLiveJob(jobId: string) {
  const job = useApi<BlendJob>(`/blend/status/${encodeURIComponent(jobId)}`);
  const [live, setLive] = useState<BlendJob | null>(null);
  useEffect(() => setLive(null), [jobId]);
  const data = live ?? job.data;
  const open = data !== null && OPEN.has(data.status);
  useEffect(() => {
    if (!open) return;
    const source = new EventSource(`/v1/blend/status/${encodeURIComponent(jobId)}/events`);
    source.addEventListener('progress', (event) => {
      const { status, progress } = JSON.parse((event as MessageEvent<string>).data) as Pick<BlendJob, 'status' | 'progress'>;
      setLive((current) => {
        const base = current ?? job.data;
        return base ? { ...base, status, progress } : base;
      });
    });
    for (const name of ['completed', 'failed', 'cancelled']) {
      source.addEventListener(name, (event) => {
        setLive(JSON.parse((event as MessageEvent<string>).data) as BlendJob);
        source.close();
      });
    }
    return () => source.close();
  }, [jobId, open]);
  return { ...job, data, setLive };
}

/** A live bar over the whole job, with its stage and frames in words. */
function ProgressBar({ progress }: { progress: Progress }) {
  const share = Math.round(overall(progress) * 100);
  const frames = progress.stage === 'encoding' ? '' : ` · ${progress.framesDone} of ${progress.framesTotal} frames`;
  return (
    <div class="progress">
      <progress max={100} value={share} aria-label="Blend progress" aria-valuetext={`${share}%, ${progress.stage}`} />
      <span class="progress-text">
        {progress.stage}
        {frames} · {share}%
      </span>
    </div>
  );
}

/** Cancels the job (POST /v1/blend/jobs/:jobId/cancel); the record it answers replaces the shown one. */
function CancelButton({ job, onCancelled }: { job: BlendJob; onCancelled: (job: BlendJob) => void }) {
  const [error, setError] = useState<Problem | null>(null);
  const [busy, setBusy] = useState(false);
  const asked = busy || job.cancelRequestedAt !== undefined;
  const cancel = async () => {
    setBusy(true);
    try {
      onCancelled(await api<BlendJob>(`/blend/jobs/${encodeURIComponent(job.jobId)}/cancel`, { method: 'POST' }));
      setError(null);
    } catch (err) {
      setError(err instanceof Problem ? err : new Problem(0, 'network', 'The server could not be reached.', {}));
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button type="button" class="danger" disabled={asked} onClick={cancel}>
        {asked ? 'Stopping…' : 'Cancel job'}
      </button>
      {error && <ErrorNote error={error} />}
    </>
  );
}

export function BlendJobPage({ jobId }: { jobId: string }) {
  const job = useLiveJob(jobId);
  const data = job.data;
  return (
    <section aria-labelledby="job-title">
      <p>
        <a {...link('/blend')}>← All blend jobs</a>
      </p>
      <h1 id="job-title">Blend job {jobId}</h1>
      {job.error && <ErrorNote error={job.error} />}
      {data && (
        <>
          <div class="job">
            <dl class="facts">
              <dt>Status</dt>
              <dd class={`status status-${data.status}`}>{data.status}</dd>
              {data.progress && (
                <>
                  <dt>Progress</dt>
                  <dd>
                    <ProgressBar progress={data.progress} />
                  </dd>
                </>
              )}
              {OPEN.has(data.status) && (
                <>
                  <dt>Cancel</dt>
                  <dd>
                    <CancelButton job={data} onCancelled={(cancelled) => job.setLive(cancelled)} />
                  </dd>
                </>
              )}
              <dt>Blend type</dt>
              <dd>
                {data.blendType}
                {data.requestedBlendType !== data.blendType && ` (requested ${data.requestedBlendType})`}
              </dd>
              <dt>Project</dt>
              <dd>{data.projectId}</dd>
              <dt>Input images</dt>
              <dd>{data.images.length}</dd>
              <dt>Quality score</dt>
              <dd>{score(data)}</dd>
              {data.quality && (
                <>
                  <dt>Quality measures</dt>
                  <dd>
                    <dl class="quality" aria-label="Quality measures">
                      {QUALITY.map(([key, label]) => {
                        const value = data.quality![key];
                        return (
                          <div key={key}>
                            <dt>{label}</dt>
                            <dd>{value === null ? '— (not measured)' : value.toFixed(2)}</dd>
                          </div>
                        );
                      })}
                    </dl>
                  </dd>
                </>
              )}
              <dt>Processing time</dt>
              <dd>{seconds(data)}</dd>
              <dt>Created · completed</dt>
              <dd>
                {when(data.createdAt)} · {when(data.completedAt)}
              </dd>
              <dt>Options</dt>
              <dd>
                align {data.options.align ? 'on' : 'off'} · background {data.options.preserveBackground ? 'kept' : 'blended'} · threshold {data.options.qualityThreshold} ·{' '}
                {data.options.outputFormat}
                {data.attempts > 1 && ` · ${data.attempts} attempts`}
              </dd>
              {data.error && (
                <>
                  <dt>Failure</dt>
                  <dd class="error">
                    <code>{data.error.code}</code> {data.error.message}
                    {data.error.imageIndex !== null && ` (input ${data.error.imageIndex + 1}, imageIndex ${data.error.imageIndex})`}
                  </dd>
                </>
              )}
            </dl>
            <div class="media">
              <Inputs job={data} />
              {data.resultUrl ? (
                <figure class="result">
                  <img src={sameOrigin(data.resultUrl)} alt={`Blended result of ${count(data.images.length)} (${data.blendType})`} width={data.width} height={data.height} />
                  <figcaption>
                    Result, {data.width}×{data.height}. <a href={sameOrigin(data.resultUrl)} download>Download</a>
                  </figcaption>
                </figure>
              ) : (
                <p class={`placeholder result-pending status-${data.status}`}>{data.status === 'failed' ? 'No result: the job failed.' : data.status === 'cancelled' ? 'No result: the job was cancelled.' : `No result yet (${data.status}).`}</p>
              )}
            </div>
          </div>
          {data.resultUrl && data.images[0] && remote(data.images[0]) && <BeforeAfter before={remote(data.images[0])!} after={sameOrigin(data.resultUrl)} width={data.width} height={data.height} />}
        </>
      )}
    </section>
  );
}

/** The inputs in the order sent: the first is marked as the reference, a failed job's culprit is highlighted. */
function Inputs({ job }: { job: BlendJob }) {
  const culprit = job.status === 'failed' ? (job.error?.imageIndex ?? null) : null;
  return (
    <section class="inputs" aria-labelledby="inputs-title">
      <h2 id="inputs-title">Inputs ({job.images.length})</h2>
      <ol class="input-list">
        {job.images.map((url, i) => {
          const src = remote(url);
          const reference = i === 0;
          const atFault = i === culprit;
          const name = `Input ${i + 1}${reference ? ' (reference frame)' : ''}${atFault ? ' (the failure is here)' : ''}`;
          return (
            <li key={i} class={`input${reference ? ' reference' : ''}${atFault ? ' at-fault' : ''}`}>
              <figure>
                {src ? (
                  <a href={src} target="_blank" rel="noopener noreferrer" referrerpolicy="no-referrer" title={url}>
                    <Thumb src={src} alt={name} />
                  </a>
                ) : (
                  <span class="placeholder">not an http(s) URL</span>
                )}
                <figcaption>
                  {i + 1}
                  {reference && <span class="badge">reference</span>}
                  {atFault && <span class="badge badge-danger">{job.error?.code ?? 'failed'}</span>}
                </figcaption>
              </figure>
            </li>
          );
        })}
      </ol>
    </section>
  );
}

/** An input's thumbnail; one that does not load (gone, refused) keeps its alt text visible and says so. */
function Thumb({ src, alt }: { src: string; alt: string }) {
  const [broken, setBroken] = useState(false);
  return (
    <>
      <img src={src} alt={alt} loading="lazy" referrerpolicy="no-referrer" class={broken ? 'broken' : undefined} onError={() => setBroken(true)} />
      {broken && <span class="thumb-note">could not be loaded</span>}
    </>
  );
}

/** The reference input over the result, clipped by a range input: left of the line is before, right is after. */
function BeforeAfter({ before, after, width, height }: { before: string; after: string; width?: number; height?: number }) {
  const [position, setPosition] = useState(50);
  return (
    <section class="before-after" aria-labelledby="compare-title">
      <h2 id="compare-title">Before and after</h2>
      <div class="compare">
        <img class="compare-after" src={after} alt="After: the blended result" width={width} height={height} />
        <img class="compare-before" src={before} alt="Before: input 1, the reference frame" referrerpolicy="no-referrer" style={{ clipPath: `inset(0 ${100 - position}% 0 0)` }} data-testid="compare-before" />
        <span class="compare-line" aria-hidden="true" style={{ left: `${position}%` }} />
        <span class="compare-tag compare-tag-before" aria-hidden="true">
          Before
        </span>
        <span class="compare-tag compare-tag-after" aria-hidden="true">
          After
        </span>
      </div>
      <label class="compare-control">
        Before/after split: share of the first input shown
        <input
          type="range"
          min={0}
          max={100}
          step={1}
          value={position}
          aria-valuetext={`${position}% input 1, ${100 - position}% result`}
          onInput={(event) => setPosition(Number((event.currentTarget as HTMLInputElement).value))}
        />
      </label>
    </section>
  );
}
