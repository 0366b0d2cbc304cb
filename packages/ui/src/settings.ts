/**
 * Connection settings (server URL, token, project), kept in localStorage. The default is the
 * page's own origin: `rivulet serve` serves the UI and the API together.
 */
import { createClient, type RivuletClient } from '@rivulet/client';

export interface Settings {
  /** Empty: the page's origin. */
  url: string;
  token: string;
  projectId: string;
}

const KEY = 'rivulet.ui.settings';

export function loadSettings(): Settings {
  const empty: Settings = { url: '', token: '', projectId: '' };
  try {
    const raw = localStorage.getItem(KEY);
    if (!raw) return empty;
    const parsed = JSON.parse(raw) as Partial<Settings>;
    return {
      url: typeof parsed.url === 'string' ? parsed.url : '',
      token: typeof parsed.token === 'string' ? parsed.token : '',
      projectId: typeof parsed.projectId === 'string' ? parsed.projectId : '',
    };
  } catch {
    return empty;
  }
}

export function saveSettings(settings: Settings): void {
  localStorage.setItem(KEY, JSON.stringify(settings));
}

export function serverUrl(settings: Settings): string {
  return settings.url.trim() === '' ? window.location.origin : settings.url.trim();
}

export function clientFor(settings: Settings): RivuletClient {
  return createClient({
    url: serverUrl(settings),
    token: settings.token.trim() === '' ? undefined : settings.token.trim(),
    projectId: settings.projectId.trim() === '' ? undefined : settings.projectId.trim(),
  });
}
