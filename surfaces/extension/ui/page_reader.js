// The read_page tool's browser half: the active tab's text through chrome.scripting.
//
// Bonsai asks for no host access at install. Clicking its toolbar button on a page grants access to
// that tab (activeTab); "Allow reading pages on every site" in Settings asks for the optional host
// permissions at that moment. Without either, the tool answers with an error saying so.
export const HOST_ORIGINS = ["http://*/*", "https://*/*"];

export async function readActiveTab() {
  const [tab] = await chrome.tabs.query({ active: true, currentWindow: true });
  if (!tab) throw new Error("no browser tab is active");
  const own = await chrome.tabs.getCurrent();
  if (own && own.id === tab.id) throw new Error("the active tab is this chat page, not a web page");
  let results;
  try {
    results = await chrome.scripting.executeScript({
      target: { tabId: tab.id },
      func: () => ({ url: location.href, title: document.title, text: document.body ? document.body.innerText : "" }),
    });
  } catch (error) {
    throw new Error("Bonsai may not read this tab: click the Bonsai toolbar button while the page is open " +
      "(that lets it read that tab), or allow every site in Settings, then ask again. " +
      `(${error.message})`);
  }
  return JSON.stringify(results[0].result);
}

// In a click handler (a user gesture): ask for the optional host permissions; true when granted.
export function allowAllSites() {
  return chrome.permissions.request({ origins: HOST_ORIGINS });
}
