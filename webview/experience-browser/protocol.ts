// Typed messages of the experience browser webview (webview <-> extension host).
import type { Experience } from '../../backend/core/types.js';
import type {
  BufferCounts,
  BulkPreview,
  ExperienceDetail,
  ExperienceFilter,
  ExperienceSortKey,
  ExperienceSummary,
  FeedbackChange,
  ServedEpisode,
  ServedRewardResult,
} from '../../backend/core/protocol.js';

/** A serve run that is serving, with the episodes it waits to be rewarded for (or why they could not be read). */
export interface ServingRun {
  runId: string;
  name?: string;
  baseUrl: string;
  episodes: ServedEpisode[];
  error?: string;
}

/** Requests from the webview, answered by the host (which asks the backend). */
export interface BrowserRequests {
  list: {
    params: { filter: ExperienceFilter; sort: ExperienceSortKey; descending: boolean; offset: number; limit: number };
    /** hint: why a run-id filter finds nothing here (the run's experiences are in another buffer). */
    result: { total: number; rows: ExperienceSummary[]; hint?: string };
  };
  get: { params: { id: string }; result: ExperienceDetail | null };
  group: { params: { groupId: string }; result: Experience[] };
  promote: { params: { id: string; editedResponse?: string }; result: FeedbackChange & { expertId: string } };
  reject: { params: { id: string }; result: FeedbackChange };
  rate: { params: { id: string; rating: number }; result: FeedbackChange };
  bulkPromote: { params: { topK: number; filter: ExperienceFilter }; result: FeedbackChange };
  /** What bulkPromote with the same params would promote (count, tasks, reward range); nothing changes. */
  bulkPreview: { params: { topK: number; filter: ExperienceFilter }; result: BulkPreview };
  undo: { params: { changeId?: string }; result: { undone: FeedbackChange | null } };
  /** The running serve runs' episodes waiting for a reward (mode serve). */
  served: { params: Record<string, never>; result: { runs: ServingRun[] } };
  /** A person's reward for a served episode, posted as an agent's is (POST /v1/rft/rewards). */
  rateEpisode: { params: { runId: string; episodeId: string; reward: number }; result: ServedRewardResult };
}

/** Notifications from the host. */
export interface BrowserNotifications {
  /** The buffer changed (feedback, new experiences): counts, and reload the visible rows. */
  bufferChanged: { path: string | undefined; counts: BufferCounts | undefined };
  /** Open with a preset filter (e.g. clicking "Expert experiences" in the sidebar). */
  setFilter: { filter: ExperienceFilter };
}

/** What the webview keeps with setState (restored when the panel is shown again). */
export interface BrowserState {
  filter: ExperienceFilter;
  sort: ExperienceSortKey;
  descending: boolean;
  scrollTop: number;
  selectedId?: string;
  colourBy: 'logprob' | 'advantage';
  view: 'detail' | 'group';
  /** The buffer shown: after a window reload the restored tab opens it again (src/webviews/restore.ts). */
  bufferPath?: string;
}
