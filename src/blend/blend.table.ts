export interface BlendJobTable {
  id: string;
  accountId: string;
  /** The client's own grouping label. */
  projectId: string;
  /** `queued` → `processing` → `completed` | `failed` | `cancelled` (and `queued` → `cancelled`). */
  status: string;
  /** As requested (`auto` included). */
  blendType: string;
  /** What the engine used; for `auto`, its choice. */
  blendTypeUsed: string | null;
  /** JSON array of image URLs. */
  images: string;
  /** JSON of the job's options (align, preserveBackground, qualityThreshold, outputFormat). */
  options: string;
  webhookUrl: string | null;
  attempts: number;
  /** Where the result lives in the result store. */
  resultKey: string | null;
  resultFormat: string | null;
  resultBytes: number | null;
  resultWidth: number | null;
  resultHeight: number | null;
  resultToken: string;
  qualityScore: number | null;
  /** JSON of the score's components. */
  quality: string | null;
  /** JSON array of each frame's alignment (pipeline.ts FrameAlignment); null without alignment or before it ran. */
  alignment: string | null;
  processingTimeMs: number | null;
  /** JSON of the worker's last progress report (progress.ts, JobProgress); null until a worker takes the job. */
  progress: string | null;
  /** When the owner asked the running job to stop; its worker records `cancelled` once its work has stopped. */
  cancelRequestedAt: number | null;
  errorCode: string | null;
  errorMessage: string | null;
  errorImageIndex: number | null;
  createdAt: number;
  startedAt: number | null;
  completedAt: number | null;
  updatedAt: number;
}

// The tables of this file, in the database's type (db/database.ts).
declare module '../db/database.js' {
  interface Database {
    blendJobs: BlendJobTable;
  }
}
